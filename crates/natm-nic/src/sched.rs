//! Thread placement for measurements (being written): CPU affinity and SCHED_FIFO.
