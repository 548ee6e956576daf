//! natm QoS ⇄ signalling IEs (in progress).
