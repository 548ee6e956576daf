//! The guaranteed service: the rate kept, the spacing factor, losses reported.
