//! Mutant tests.
