//! Internals for this crate's benches (feature `_internal_test_exports`): not API, no
//! stability, never enabled by a program.
//!
//! [`lane_pair`] joins two lane-path [`Vc`]s by one lane in this process, as a splice
//! joins two applications' lanes (natm-link's `lane` module), with no daemon and no
//! switch: what `benches/lane_round_trip.rs` (two threads) and
//! `benches/one_thread_round_trip.rs` (the processing alone) time raw AAL5 and a transport
//! channel on, away from the lab's daemons.

use super::*;
use natm_nic::channel::ChannelConfig;
use natm_nic::shm::HeapMem;

/// The VC both ends' cells carry.
const PAIR_VC: (u32, u32) = (0, 100);

/// Two lane-path VCs of `count` buffers of `size` bytes each (a multiple of 64), joined by
/// an in-process lane of natm-link's `LANE_RING_CELLS` cells each way, UBR, waiting as
/// `notify` says. Each end holds one side of a socket pair as its "daemon", so neither
/// sees its daemon gone while the other lives; dropping a VC asks no daemon to close it.
pub fn lane_pair(count: u32, size: u32, notify: NotifyMode) -> Result<(Vc, Vc), Error> {
    let (a, b) = ShmLink::pair_with(natm_link::lane::LANE_RING_CELLS, ShmWait::EventFd)
        .map_err(|e| protocol(format!("lane: {e}")))?;
    let (da, db) = UnixStream::pair()?;
    Ok((
        end(a, da, count, size, notify)?,
        end(b, db, count, size, notify)?,
    ))
}

/// One end of [`lane_pair`] over `link`.
fn end(
    link: ShmLink,
    daemon: UnixStream,
    count: u32,
    size: u32,
    notify: NotifyMode,
) -> Result<Vc, Error> {
    let vc = VcId::uni(PAIR_VC.0, PAIR_VC.1).map_err(|e| protocol(e.to_string()))?;
    let state_fd = rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::NONBLOCK | rustix::event::EventfdFlags::CLOEXEC,
    )
    .map_err(|e| Error::Io(e.into()))?;
    let max_sdu = size as usize;
    let lane = LaneVc::ubr(1, vc, max_sdu);
    let engine = LaneEngine::new(lane, count, max_sdu, link, notify, state_fd)?;
    // On the lane path the channel region carries the state word only (and, as hostd's
    // does, the buffers' shape).
    let entries = count.next_power_of_two();
    let cfg = ChannelConfig {
        tx_entries: entries,
        rx_entries: entries,
        completion_entries: 2 * entries,
        buffer_size: size,
        buffer_count: count,
    };
    let region = cfg
        .layout()
        .map_err(|e| protocol(format!("channel shape: {e}")))?
        .region_size;
    let mem = HeapMem::new(region).map_err(|e| protocol(format!("channel region: {e}")))?;
    let ch = Channel::create(Arc::new(mem), &cfg).map_err(|e| protocol(format!("channel: {e}")))?;
    let app = ch.app().map_err(|e| protocol(format!("channel: {e}")))?;
    let direct = Direct::assemble(
        app,
        Waiter::BusyPoll,
        size,
        count,
        daemon,
        Some(Box::new(engine)),
    )?;
    let (conn, _) = UnixStream::pair()?;
    let mut conn = Conn::new(conn);
    // No daemon holds the VC: its drop has nobody to ask.
    conn.closed = true;
    Ok(Vc {
        conn: Arc::new(Mutex::new(conn)),
        handle: 1,
        cookie: String::new(),
        max_sdu,
        direct: Some(direct),
        call: None,
        qos: default_qos(),
        daemon_sent: 0,
    })
}
