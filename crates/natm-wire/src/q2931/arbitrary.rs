//! proptest strategies (in progress).
