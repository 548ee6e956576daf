//! The event loop: dispatching events to the cores, moving cells between them, the
//! hosts' CPUs and apps, actions and audits.

use super::*;

impl World {
    // ------------------------------------------------------------ event loop

    pub(super) fn armed_slot(&mut self, t: Target) -> Option<&mut u64> {
        let i = t.index() as usize;
        match t.kind() {
            kind::LINK => self.links.get_mut(i / 2).map(|l| &mut l.armed[i % 2]),
            kind::ADAPTER => self.hosts.get_mut(i).map(|h| &mut h.armed[0]),
            kind::CPU => self.hosts.get_mut(i).map(|h| &mut h.armed[1]),
            kind::TIMER => self.hosts.get_mut(i).map(|h| &mut h.armed[2]),
            kind::SWITCH => self.switches.get_mut(i).map(|s| &mut s.armed),
            kind::ACTION => Some(&mut self.action_armed),
            kind::CALLS => self
                .switches
                .get_mut(i)
                .and_then(|s| s.calls.as_mut())
                .map(|c| &mut c.armed),
            _ => None,
        }
    }

    /// Wake `target` at `t` ns unless it is armed for that instant or earlier.
    pub(super) fn arm(&mut self, target: Target, t: u64) {
        let Some(slot) = self.armed_slot(target) else {
            return;
        };
        if t < *slot {
            *slot = t;
            self.queue.push(t, target);
        }
    }

    /// Whether a popped entry is the one its component waits for (and disarm it).
    pub(super) fn take_armed(&mut self, target: Target, t: u64) -> bool {
        match self.armed_slot(target) {
            Some(slot) if *slot == t => {
                *slot = IDLE;
                true
            }
            _ => false,
        }
    }

    /// Arm at a core's `poll_timeout`, never at or before the instant just drained.
    pub(super) fn arm_at(&mut self, target: Target, timeout: Option<Instant>) {
        if let Some(t) = timeout {
            let now = self.now.as_nanos();
            let t = t.as_nanos();
            self.arm(target, if t <= now { now + RETRY_NS } else { t });
        }
    }

    pub(super) fn record(&mut self, t: u64, seq: u64, target: Target, count: u64) {
        for w in [t, seq, u64::from(target.0), count] {
            self.digest = (self.digest ^ w).wrapping_mul(FNV_PRIME);
        }
        if let Some(out) = &mut self.trace {
            let name = match target.kind() {
                kind::LINK => format!("link{}.{}", target.index() / 2, target.index() % 2),
                kind::SWITCH | kind::CALLS => self.switches[target.index() as usize].name.clone(),
                kind::ACTION => "-".to_string(),
                _ => self.hosts[target.index() as usize].name.clone(),
            };
            // A trace that cannot be written is given up, not a reason to stop the run.
            if writeln!(
                out,
                "{t} {seq} {} {name} {count}",
                kind::NAMES[target.kind() as usize]
            )
            .is_err()
            {
                self.trace = None;
            }
        }
    }

    pub(super) fn trace_note(&mut self, text: &str) {
        let t = self.now.as_nanos();
        self.digest =
            (self.digest ^ crate::seed::fnv1a(FNV_OFFSET, text.as_bytes())).wrapping_mul(FNV_PRIME);
        if let Some(out) = &mut self.trace
            && writeln!(out, "{t} - note {text}").is_err()
        {
            self.trace = None;
        }
    }

    pub(crate) fn violate(&mut self, invariant: &'static str, detail: String) {
        if self.violation.is_none() {
            self.violation = Some(Violation {
                at: self.now,
                seq: self.cur_seq,
                invariant,
                detail,
            });
        }
    }

    pub(super) fn dispatch(&mut self, target: Target) -> u64 {
        let i = target.index();
        match target.kind() {
            kind::LINK => self.link_event(i / 2, (i % 2) as usize),
            kind::ADAPTER => {
                let now = self.now;
                let host = &mut self.hosts[i as usize];
                if !host.up {
                    return 0;
                }
                host.core.handle_timeout(now);
                self.drain_host(i)
            }
            kind::SWITCH => {
                let now = self.now;
                let node = &mut self.switches[i as usize];
                if !node.up {
                    return 0;
                }
                let mut outs = std::mem::take(&mut self.outs);
                outs.clear();
                node.take_due(now.as_nanos(), &mut outs);
                // A down port's only timeout is its AIS, which queues cells on the output
                // ports of its connections, not due ones: then every port is polled. What
                // else `handle_timeout` does is nothing (it sends AIS only). A port is
                // down exactly while its link is (`apply_inner`, `restart_switch`).
                let links = &self.links;
                let ais = outs
                    .iter()
                    .any(|&p| !links[node.ports[p as usize].link as usize].up);
                if self.poll_all_ports || ais {
                    node.sw.handle_timeout(now);
                    self.outs = outs;
                    return self.drain_switch(i);
                }
                // Only due ports have output; the others are polled late, as after an
                // input (see `cells_to_switch`).
                self.catch_up(i, &outs);
                let n = self.drain_ports(i, outs.iter().copied());
                let node = &mut self.switches[i as usize];
                if outs.len() < node.ports.len() {
                    node.skipped_at = now.as_nanos();
                }
                self.outs = outs;
                n
            }
            kind::CPU => self.cpu_done(i),
            kind::TIMER => self.timers_due(i),
            kind::ACTION => self.actions_due(),
            kind::CALLS => self.calls_timeout(i),
            _ => 0,
        }
    }

    pub(super) fn link_event(&mut self, l: u32, d: usize) -> u64 {
        let now = self.now;
        // `cells` keeps its length between events (clearing would write it whole): only
        // what is polled into it is read.
        let mut cells = std::mem::take(&mut self.cells);
        let link = &mut self.links[l as usize];
        let mut len = 0;
        loop {
            if cells.len() < len + BATCH {
                cells.resize(len + BATCH, [0; 53]);
            }
            let n = link.dirs[d].poll_transmit_cells(now, &mut cells[len..len + BATCH]);
            len += n;
            if n < BATCH {
                break;
            }
        }
        let to = link.ends[1 - d];
        let timeout = link.dirs[d].poll_timeout();
        let n = len as u64;
        match to {
            EndRec::Host(h) => self.cells_to_host(h, &mut cells[..len]),
            EndRec::Port(s, p) => self.cells_to_switch(s, p, &cells[..len]),
        }
        self.cells = cells;
        self.arm_at(Target::new(kind::LINK, l * 2 + d as u32), timeout);
        n
    }

    pub(super) fn cells_to_host(&mut self, h: u32, cells: &mut [[u8; 53]]) {
        let now = self.now;
        if !self.hosts[h as usize].up {
            self.stats.dropped_node_down += cells.len() as u64;
            return;
        }
        self.stats.cell_events += cells.len() as u64;
        if let Err(detail) = self.check.cells_at_host(h, cells) {
            let name = &self.hosts[h as usize].name;
            self.violate("cell order per VC", format!("into host {name}: {detail}"));
        }
        let host = &mut self.hosts[h as usize];
        let mut at = 0;
        while at < cells.len() {
            at += host.core.handle_cells(now, &mut cells[at..]);
        }
        self.drain_host(h);
    }

    pub(super) fn cells_to_switch(&mut self, s: u32, p: PortId, cells: &[[u8; 53]]) {
        let now = self.now;
        if !self.switches[s as usize].up {
            self.stats.dropped_node_down += cells.len() as u64;
            return;
        }
        self.stats.cell_events += cells.len() as u64;
        let node = &self.switches[s as usize];
        if let Err((inv, detail)) = self.check.cells_into_switch(s, node, p, cells, now) {
            self.violate(inv, detail);
        }
        // Only the ports these cells go to can have new output (the switch's own timers
        // wake the others), so a switch of many ports is not polled whole per cell. What
        // polling an idle port does (its pacer forgets unused slots) is done late, exactly:
        // before a port gets cells, it is polled empty at the last instant it was skipped.
        let mut outs = std::mem::take(&mut self.outs);
        outs.clear();
        let node = &mut self.switches[s as usize];
        let selective = !self.poll_all_ports && node.outputs(p, cells, &mut outs);
        if selective {
            self.catch_up(s, &outs);
        }
        let node = &mut self.switches[s as usize];
        node.sw.handle_cells(now, p, cells);
        if let Err(detail) = self
            .check
            .after_switch_input(s, &self.switches[s as usize], p)
        {
            self.violate("conforming traffic never policed", detail);
        }
        // Signalling cells go to call control, which drains every port.
        if self.calls_input(s) {
            self.outs = outs;
            return;
        }
        if selective {
            self.drain_ports(s, outs.iter().copied());
            let node = &mut self.switches[s as usize];
            if outs.len() < node.ports.len() {
                node.skipped_at = now.as_nanos();
            }
        } else {
            self.drain_switch(s);
        }
        self.outs = outs;
    }

    /// Polls each of these ports empty at the last instant ports were skipped, unless it
    /// was polled since: what polling all ports there would have done to them.
    pub(super) fn catch_up(&mut self, s: u32, ports: &[u32]) {
        let node = &mut self.switches[s as usize];
        let skipped = node.skipped_at;
        for &i in ports {
            let r = &mut node.ports[i as usize];
            if r.polled_at < skipped && !r.clogged {
                node.sw
                    .poll_transmit(Instant::from_nanos(skipped), r.id, &mut []);
                r.polled_at = skipped;
            }
        }
    }

    /// Offer cells to a link direction (dropped if the link is down).
    pub(super) fn offer(&mut self, l: u32, d: usize, cells: &[[u8; 53]]) {
        let now = self.now;
        let link = &mut self.links[l as usize];
        if !link.up {
            self.stats.dropped_link_down += cells.len() as u64;
            return;
        }
        if let Some(dup) = link.dup[d].as_mut() {
            let mut all = Vec::with_capacity(cells.len());
            self.stats.signalling_duplicated += dup.apply(cells, &mut all);
            self.stats.cell_events += all.len() as u64;
            link.dirs[d].handle_cells(now, &all);
        } else {
            self.stats.cell_events += cells.len() as u64;
            link.dirs[d].handle_cells(now, cells);
        }
        let timeout = link.dirs[d].poll_timeout();
        self.arm_at(Target::new(kind::LINK, l * 2 + d as u32), timeout);
    }

    /// The switch's drain rule: every unclogged port until it gives less than asked.
    pub(super) fn drain_switch(&mut self, s: u32) -> u64 {
        let n = self.switches[s as usize].ports.len() as u32;
        self.drain_ports(s, 0..n)
    }

    /// The drain rule on the ports of these indices.
    pub(super) fn drain_ports(&mut self, s: u32, ports: impl IntoIterator<Item = u32>) -> u64 {
        let now = self.now;
        let mut total = 0u64;
        if !self.switches[s as usize].up {
            return 0;
        }
        let mut out = std::mem::take(&mut self.out);
        out.resize(BATCH, [0; 53]);
        for pi in ports {
            let pi = pi as usize;
            let node = &mut self.switches[s as usize];
            let port = &node.ports[pi];
            if port.clogged {
                // Its cells wait, and so may its timeout.
                node.refresh_due(pi as u32);
                continue;
            }
            let (id, link, out_dir) = (port.id, port.link, port.out_dir);
            node.ports[pi].polled_at = now.as_nanos();
            loop {
                let node = &mut self.switches[s as usize];
                let n = node.sw.poll_transmit(now, id, &mut out);
                if n == 0 {
                    break;
                }
                total += n as u64;
                if let Err(detail) = self.check.cells_out_of_switch(
                    s,
                    &self.switches[s as usize],
                    id,
                    &out[..n],
                    now,
                ) {
                    self.violate("policing bound", detail);
                }
                self.offer(link, out_dir, &out[..n]);
                if n < BATCH {
                    break;
                }
            }
            self.switches[s as usize].refresh_due(pi as u32);
        }
        self.out = out;
        let node = &mut self.switches[s as usize];
        let timeout = node.next_due();
        debug_assert_eq!(
            timeout,
            node.sw.poll_timeout(),
            "{}: port timeouts",
            node.name
        );
        self.arm_at(Target::new(kind::SWITCH, s), timeout);
        total
    }

    /// The adapter's drain rule, then keep receive buffers posted and arm its timeout.
    pub(super) fn drain_host(&mut self, h: u32) -> u64 {
        let now = self.now;
        let mut total = 0u64;
        if !self.hosts[h as usize].up {
            return 0;
        }
        let mut out = std::mem::take(&mut self.out);
        out.resize(BATCH, [0; 53]);
        loop {
            let host = &mut self.hosts[h as usize];
            let Some(cells) = host.core.poll_transmit(now) else {
                break;
            };
            // A link direction takes every cell offered (its queue drops what it must).
            let n = cells.len();
            // Signalling and OAM cells may come in a run longer than a channel's batch.
            if out.len() < n {
                out.resize(n, [0; 53]);
            }
            out[..n].copy_from_slice(cells);
            host.core.transmitted(n);
            total += n as u64;
            self.stats.cell_events += n as u64;
            if let Some((l, side)) = self.hosts[h as usize].link {
                self.offer(l, side, &out[..n]);
            }
        }
        self.out = out;
        loop {
            let host = &mut self.hosts[h as usize];
            let Some(c) = host.adapter_mut().poll_completion() else {
                break;
            };
            self.completion(h, c);
        }
        let host = &mut self.hosts[h as usize];
        while host.adapter_mut().poll_event().is_some() {}
        if host.sig.is_some() {
            while let Some(e) = self.hosts[h as usize].core.poll_event() {
                self.host_call_event(h, e);
            }
        } else {
            while let Some(e) = host.core.poll_event() {
                host.core_events.push(e);
            }
        }
        let host = &mut self.hosts[h as usize];
        while let Some(b) = host.rx_free.pop() {
            host.bufs[b.0 as usize] = Buf::Adapter(None);
            host.adapter_mut().post_rx_buffer(b);
        }
        let timeout = host.core.poll_timeout();
        self.arm_at(Target::new(kind::ADAPTER, h), timeout);
        self.pump_notices(h);
        if !self.hosts[h as usize].call_notes.is_empty() {
            self.pump_calls(h);
        }
        total
    }

    pub(super) fn completion(&mut self, h: u32, c: Completion) {
        let host = &mut self.hosts[h as usize];
        let i = c.buffer.0 as usize;
        if i >= host.bufs.len() || !matches!(host.bufs[i], Buf::Adapter(_)) {
            // A refusal that does not transfer ownership: nothing comes back.
            return;
        }
        match c.direction {
            AdDir::Tx => {
                host.bufs[i] = Buf::Free;
                host.tx_free.push(c.buffer);
                let vc = c.handle.and_then(|hd| host.by_handle.get(&hd).copied());
                if let Some(vc) = vc {
                    host.notices.push_back((vc, c.len, c.status == Status::Ok));
                }
            }
            AdDir::Rx => {
                let vc = c.handle.and_then(|hd| host.by_handle.get(&hd).copied());
                match (c.status, vc) {
                    (Status::Ok, Some(vc)) => {
                        host.bufs[i] = Buf::Received;
                        self.cpu_push(
                            h,
                            Job::Recv {
                                vc,
                                buf: c.buffer,
                                len: c.len,
                            },
                        );
                    }
                    _ => {
                        host.bufs[i] = Buf::Free;
                        host.rx_free.push(c.buffer);
                    }
                }
            }
        }
    }

    pub(super) fn cpu_push(&mut self, h: u32, job: Job) {
        let now = self.now.as_nanos();
        let host = &mut self.hosts[h as usize];
        host.cpu.push_back(job);
        if !host.cpu_busy {
            host.cpu_busy = true;
            let cost = job_cost(&host.config.costs, &job) + host.config.costs.wakeup.as_nanos();
            self.arm(Target::new(kind::CPU, h), now.saturating_add(cost));
        }
    }

    pub(super) fn cpu_done(&mut self, h: u32) -> u64 {
        let now = self.now;
        let host = &mut self.hosts[h as usize];
        if !host.up {
            return 0;
        }
        let Some(job) = host.cpu.pop_front() else {
            host.cpu_busy = false;
            return 0;
        };
        match job {
            Job::Send { vc, buf, len } => {
                let handle = host.vcs.get(&vc).and_then(|r| r.handle);
                match handle {
                    Some(handle) => {
                        host.bufs[buf.0 as usize] = Buf::Adapter(Some(handle));
                        host.adapter_mut().post_tx(now, buf, len, handle);
                        self.stats.sdus_sent += 1;
                        self.drain_host(h);
                    }
                    None => {
                        host.bufs[buf.0 as usize] = Buf::Free;
                        host.tx_free.push(buf);
                        host.notices.push_back((vc, len, false));
                        self.stats.sends_refused += 1;
                        self.pump_notices(h);
                    }
                }
            }
            Job::Recv { vc, buf, len } => {
                let bytes = self.hosts[h as usize]
                    .mem()
                    .buffer(buf)
                    .map(|b| &b[..len.min(b.len())])
                    .unwrap_or(&[]);
                if let Err(detail) = self.check.sdu_delivered(h, vc, bytes) {
                    let name = &self.hosts[h as usize].name;
                    self.violate("no bad frame delivered", format!("host {name} {detail}"));
                }
                self.stats.sdus_delivered += 1;
                let host = &mut self.hosts[h as usize];
                let mut app = host.app.take();
                let mut io = std::mem::take(&mut host.io);
                if let Some(app) = app.as_mut() {
                    let bytes = host
                        .mem()
                        .buffer(buf)
                        .map(|b| &b[..len.min(b.len())])
                        .unwrap_or(&[]);
                    app.on_sdu(now, vc, bytes, &mut io);
                }
                let host = &mut self.hosts[h as usize];
                host.app = app;
                host.io = io;
                host.bufs[buf.0 as usize] = Buf::Free;
                host.rx_free.push(buf);
                self.carry_out_io(h);
                self.drain_host(h);
            }
        }
        let now_ns = self.now.as_nanos();
        let host = &mut self.hosts[h as usize];
        match host.cpu.front() {
            Some(next) if host.up => {
                let cost = job_cost(&host.config.costs, next);
                self.arm(Target::new(kind::CPU, h), now_ns.saturating_add(cost));
            }
            _ => host.cpu_busy = false,
        }
        1
    }

    pub(super) fn timers_due(&mut self, h: u32) -> u64 {
        let now = self.now.as_nanos();
        let mut n = 0;
        loop {
            let host = &mut self.hosts[h as usize];
            if !host.up {
                break;
            }
            match host.timers.peek() {
                Some(Reverse((t, _, _))) if *t <= now => {}
                _ => break,
            }
            let Some(Reverse((_, _, token))) = host.timers.pop() else {
                break;
            };
            n += 1;
            self.call_app(h, |app, now, io| app.on_timer(now, token, io));
        }
        self.arm_timer(h);
        n
    }

    pub(super) fn arm_timer(&mut self, h: u32) {
        if let Some(Reverse((t, _, _))) = self.hosts[h as usize].timers.peek() {
            let t = (*t).max(self.now.as_nanos());
            self.arm(Target::new(kind::TIMER, h), t);
        }
    }

    /// Calls the app, then carries out what it asked.
    pub(super) fn call_app(&mut self, h: u32, f: impl FnOnce(&mut dyn App, Instant, &mut AppIo)) {
        let now = self.now;
        let host = &mut self.hosts[h as usize];
        let Some(mut app) = host.app.take() else {
            return;
        };
        let mut io = std::mem::take(&mut host.io);
        f(app.as_mut(), now, &mut io);
        if let Some((invariant, detail)) = io.take_failure() {
            let name = &self.hosts[h as usize].name;
            self.violate(invariant, format!("host {name}: {detail}"));
        }
        let host = &mut self.hosts[h as usize];
        host.app = Some(app);
        host.io = io;
        self.carry_out_io(h);
    }

    /// Sends and timers asked by the last app call.
    pub(super) fn carry_out_io(&mut self, h: u32) {
        let now = self.now.as_nanos();
        let host = &mut self.hosts[h as usize];
        let io = std::mem::take(&mut host.io);
        if !io.call_commands().is_empty() {
            // Before the sends: an accepted call's VC is open for them.
            self.carry_out_calls(h, io.call_commands());
            self.drain_host(h);
        }
        for (vc, sdu) in io.sends() {
            let host = &mut self.hosts[h as usize];
            let open = host.vcs.get(&vc).is_some_and(|r| r.handle.is_some());
            let ok_len = !sdu.is_empty() && sdu.len() <= 65535 && sdu.len() <= host.mem().size();
            let buf = if open && ok_len {
                host.tx_free.pop()
            } else {
                None
            };
            match buf {
                Some(buf) => {
                    if let Some(b) = host.mem_mut().buffer_mut(buf) {
                        b[..sdu.len()].copy_from_slice(sdu);
                    }
                    host.bufs[buf.0 as usize] = Buf::Cpu;
                    host.tx_meta[buf.0 as usize] = (vc, sdu.len());
                    self.cpu_push(
                        h,
                        Job::Send {
                            vc,
                            buf,
                            len: sdu.len(),
                        },
                    );
                }
                None => {
                    self.stats.sends_refused += 1;
                    self.hosts[h as usize]
                        .notices
                        .push_back((vc, sdu.len(), false));
                }
            }
        }
        let host = &mut self.hosts[h as usize];
        for &(at, token) in io.timers() {
            let seq = host.timer_seq;
            host.timer_seq += 1;
            host.timers
                .push(Reverse((at.as_nanos().max(now), seq, token)));
        }
        let mut io = io;
        io.clear();
        self.hosts[h as usize].io = io;
        self.arm_timer(h);
    }

    /// Tell the app about finished sends, in order (an app may send again from there).
    pub(super) fn pump_notices(&mut self, h: u32) {
        while let Some((vc, len, ok)) = self.hosts[h as usize].notices.pop_front() {
            self.call_app(h, |app, now, io| app.on_sent(now, vc, len, ok, io));
        }
    }

    pub(super) fn arm_action(&mut self) {
        if let Some((&(t, _), _)) = self.actions.first_key_value() {
            self.arm(Target::new(kind::ACTION, 0), t);
        }
    }

    pub(super) fn actions_due(&mut self) -> u64 {
        let now = self.now.as_nanos();
        let mut n = 0;
        while let Some(entry) = self.actions.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let action = entry.remove();
            n += 1;
            let text = format!("{action:?}");
            if let Err(e) = self.apply(action) {
                self.trace_note(&format!("refused {text}: {e}"));
            } else {
                self.trace_note(&text);
            }
        }
        self.arm_action();
        n
    }

    pub(super) fn apply_inner(&mut self, action: Action) -> Result<(), SimError> {
        let now = self.now;
        match action {
            Action::LinkUp(l, up) => {
                let link = self
                    .links
                    .get_mut(l.0 as usize)
                    .ok_or(SimError::UnknownLink(l.0))?;
                if link.up == up {
                    return Ok(());
                }
                link.up = up;
                let ends = link.ends;
                for end in ends {
                    match end {
                        EndRec::Port(s, p) => {
                            let node = &mut self.switches[s as usize];
                            if node.up {
                                let _ = node.sw.set_port_up(now, p, up);
                                self.drain_switch(s);
                                if self.switches[s as usize].calls.is_some() {
                                    self.calls_port(s, p, up);
                                }
                            }
                        }
                        EndRec::Host(h) => self.host_link(h, up),
                    }
                }
                Ok(())
            }
            Action::CrashSwitch(s) => {
                self.switch_ref(s)?;
                let node = &mut self.switches[s.0 as usize];
                if node.up {
                    node.up = false;
                    node.sw = Switch::new(node.config);
                    node.clear_due();
                    for r in node.xcs.values_mut() {
                        r.live = None;
                    }
                    node.armed = IDLE;
                    if let Some(c) = node.calls.as_mut() {
                        c.cc = None;
                        c.armed = IDLE;
                    }
                }
                Ok(())
            }
            Action::RestartSwitch(s) => {
                self.switch_ref(s)?;
                self.restart_switch(s.0);
                Ok(())
            }
            Action::CrashHost(h) => {
                self.host_ref(h)?;
                let host = &mut self.hosts[h.0 as usize];
                if host.up {
                    self.host_crash_calls(h.0);
                    let host = &mut self.hosts[h.0 as usize];
                    host.up = false;
                    // Sends the crash took (waiting for the CPU or in the adapter): the
                    // app hears of them when it is back, before it starts again.
                    host.notices.clear();
                    for (i, b) in host.bufs.iter().enumerate() {
                        if matches!(b, Buf::Cpu | Buf::Adapter(Some(_))) {
                            let (vc, len) = host.tx_meta[i];
                            host.notices.push_back((vc, len, false));
                        }
                    }
                    host.cpu.clear();
                    host.cpu_busy = false;
                    host.timers.clear();
                    host.armed = [IDLE; 3];
                    host.by_handle.clear();
                    for r in host.vcs.values_mut() {
                        r.handle = None;
                    }
                    let n = host.config.buffers;
                    let rx = host.rx_count();
                    host.rx_free = (0..rx).rev().map(BufferId).collect();
                    host.tx_free = (rx..n).rev().map(BufferId).collect();
                    host.bufs.fill(Buf::Free);
                    // The adapter loses everything; the host keeps its VCs' admissions.
                    host.core
                        .reset_channel(host.channel)
                        .map_err(|e| SimError::Host {
                            host: host.name.clone(),
                            reason: e.to_string(),
                        })?;
                }
                Ok(())
            }
            Action::RestartHost(h) => {
                self.host_ref(h)?;
                let host = &mut self.hosts[h.0 as usize];
                if host.up {
                    return Ok(());
                }
                host.up = true;
                self.host_restart_calls(h.0);
                let host = &mut self.hosts[h.0 as usize];
                // The host core reopened every VC in the fresh adapter at the crash.
                for (vc, rec) in host.vcs.iter_mut() {
                    rec.handle = Some(rec.core.0);
                    host.by_handle.insert(rec.core.0, *vc);
                }
                self.drain_host(h.0);
                self.pump_notices(h.0);
                self.call_app(h.0, |app, now, io| app.start(now, io));
                self.hosts[h.0 as usize].started = true;
                Ok(())
            }
            Action::Clog(s, p, on) => {
                let node = self
                    .switches
                    .get_mut(s.0 as usize)
                    .ok_or(SimError::UnknownSwitch(s.0))?;
                let name = node.name.clone();
                let port =
                    node.ports
                        .iter_mut()
                        .find(|r| r.id == p)
                        .ok_or_else(|| SimError::Switch {
                            switch: name,
                            reason: format!("no port {p}"),
                        })?;
                port.clogged = on;
                self.drain_switch(s.0);
                Ok(())
            }
            Action::Connect(s, xc) => self.connect(s, &xc).map(|_| ()),
            Action::Disconnect(s, c) => self.disconnect(s, c),
            Action::DisconnectEndpoint(s, e) => {
                let node = self.switch_ref(s)?;
                let id = node
                    .xcs
                    .iter()
                    .find(|(_, r)| r.xc.a == e)
                    .map(|(id, _)| *id)
                    .ok_or_else(|| SimError::Switch {
                        switch: node.name.clone(),
                        reason: format!("no cross-connect from {e}"),
                    })?;
                self.disconnect(s, id)
            }
            Action::OpenVc(h, vc, qos, options) => self.open_vc_with(h, vc, &qos, options),
            Action::CloseVc(h, vc) => self.close_vc(h, vc),
            Action::DuplicateSignalling(l, p) => {
                let seed = self.seed;
                let link = self
                    .links
                    .get_mut(l.0 as usize)
                    .ok_or(SimError::UnknownLink(l.0))?;
                for (d, slot) in link.dup.iter_mut().enumerate() {
                    *slot = (p > 0.0).then(|| Dup {
                        p: p.min(1.0),
                        rng: crate::seed::Rng::for_component(
                            seed,
                            &format!("dup link {} dir {d} at {}", l.0, now.as_nanos()),
                        ),
                        frame: Vec::new(),
                    });
                }
                Ok(())
            }
            Action::Impairments(l, dirs, imp) => {
                let seed = self.seed;
                let link = self
                    .links
                    .get_mut(l.0 as usize)
                    .ok_or(SimError::UnknownLink(l.0))?;
                let which: &[usize] = match dirs {
                    Dirs::AToB => &[0],
                    Dirs::BToA => &[1],
                    Dirs::Both => &[0, 1],
                };
                for &d in which {
                    let mut imp = imp;
                    // A fresh stream per change, still a function of the seed and time.
                    imp.seed =
                        sub_seed(seed, &format!("link {} dir {d} at {}", l.0, now.as_nanos()));
                    link.dirs[d].set_impairments(&imp);
                }
                Ok(())
            }
        }
    }

    pub(super) fn restart_switch(&mut self, s: u32) {
        let now = self.now;
        let node = &mut self.switches[s as usize];
        if node.up {
            return;
        }
        node.up = true;
        node.sw = Switch::new(node.config);
        node.clear_due();
        let mut notes = Vec::new();
        for p in &node.ports {
            if let Err(e) = node.sw.add_port(p.id, p.config) {
                notes.push(format!("{}: port {} not remade: {e}", node.name, p.id));
            }
        }
        for p in &node.ports {
            if !self.links[p.link as usize].up {
                let _ = node.sw.set_port_up(now, p.id, false);
            }
        }
        let mut gone = Vec::new();
        for (id, r) in node.xcs.iter_mut() {
            match node.sw.connect(now, &r.xc) {
                Ok(x) => r.live = Some(x),
                Err(e) => {
                    notes.push(format!(
                        "{}: cross-connect {} not remade: {e}",
                        node.name, id.0
                    ));
                    gone.push(*id);
                }
            }
        }
        for id in gone {
            node.xcs.remove(&id);
        }
        node.route_dirty = true;
        let ids: Vec<ConnId> = node.xcs.keys().copied().collect();
        for id in ids {
            self.check.leg_reset(s, id);
        }
        for n in notes {
            self.trace_note(&n);
        }
        self.drain_switch(s);
        if self.switches[s as usize].calls.is_some() {
            self.fresh_calls(s);
        }
    }

    /// Events until the next periodic audit: [`AUDIT_EVERY`], or more in a world so large
    /// that an audit every [`AUDIT_EVERY`] events would be a large share of the run.
    pub(super) fn audit_period(&self) -> u64 {
        let switches: usize = self
            .switches
            .iter()
            .map(|s| s.xcs.len() + s.ports.len())
            .sum();
        let hosts: usize = self.hosts.iter().map(|h| h.bufs.len()).sum();
        AUDIT_EVERY.max(AUDIT_EVENTS_PER_ITEM * (switches + hosts) as u64)
    }

    /// The audits that hold at any instant: CAC books, connection counts, cell
    /// conservation, buffer ownership.
    pub(super) fn audit(&mut self) {
        for s in 0..self.switches.len() {
            self.audit_switch(s as u32);
        }
        for h in 0..self.hosts.len() {
            let host = &self.hosts[h];
            if !host.up {
                continue;
            }
            for (i, b) in host.bufs.iter().enumerate() {
                let held = host.adapter().holds(BufferId(i as u32));
                let ours = matches!(b, Buf::Adapter(_));
                if held != ours {
                    let detail = format!(
                        "host {}: buffer {i} is {b:?} in the host's record but the adapter {} it",
                        host.name,
                        if held { "holds" } else { "does not hold" }
                    );
                    self.violate("nothing leaked after release", detail);
                    return;
                }
            }
        }
    }

    pub(super) fn audit_switch(&mut self, s: u32) {
        self.audit_switch_ports(s, None);
    }

    pub(super) fn audit_switch_ports(&mut self, s: u32, only: Option<[PortId; 2]>) {
        let node = &self.switches[s as usize];
        if let Err((inv, detail)) = crate::check::audit_switch(node, only) {
            self.violate(inv, detail);
        }
    }
}

pub(super) fn job_cost(costs: &HostCosts, job: &Job) -> u64 {
    match *job {
        Job::Send { len, .. } => costs.send(len).as_nanos(),
        Job::Recv { len, .. } => costs.recv(len).as_nanos(),
    }
}

/// A host core on a link of `cps` cells/s (`None`: unlimited) with the host's one channel.
pub(super) fn make_core(
    name: &str,
    config: &HostConfig,
    cps: Option<u32>,
    signalling: Option<SignallingConfig>,
) -> Result<(Host<VecBuffers>, ChannelId), String> {
    let mut core = Host::new(CoreConfig {
        max_channels: 1,
        batch: BATCH,
        signalling,
        ..CoreConfig::new(name, cps)
    });
    core.link_up();
    let mut c = config.adapter;
    c.buffers = config.buffers;
    c.rx_buffer_size = config.buffer_size;
    c.max_tx_queued = c.max_tx_queued.max(config.buffers as usize);
    let mem = VecBuffers::new(config.buffers, config.buffer_size);
    let channel = core.open_channel(c, mem).map_err(|e| e.to_string())?;
    Ok((core, channel))
}
