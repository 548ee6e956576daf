//! tshark decodes what natm's Q.2931 codec emits: random valid messages (every message
//! type, every IE Wireshark 4.0 knows, random contents) go into a pcap of exported PDUs
//! for Wireshark's `q2931` dissector (atm-facts §9), and tshark must report no malformed
//! packet and no expert warning beyond the known false positive of its AAL-parameter and
//! traffic-descriptor loops (atm-facts §5.5).
//!
//! Skipped (with a note on stderr) when `tshark` is not installed. This is the codec's
//! quick check; the 1,000-message capture test belongs to `natm dump`.

use std::io::Write as _;
use std::process::Command;

use natm_wire::q2931::Message;
use natm_wire::q2931::sample::{Sampler, wireshark_message};

/// Builds a classic pcap (linktype 252) with one exported PDU per message.
fn pcap(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0xa1b2_c3d4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0; 8]);
    out.extend(65535u32.to_le_bytes());
    out.extend(252u32.to_le_bytes());
    for (i, m) in messages.iter().enumerate() {
        // Tag 12 (dissector name), "q2931" NUL-padded to 8 bytes, then the end tag.
        let mut rec = vec![0, 12, 0, 8];
        rec.extend(b"q2931\0\0\0");
        rec.extend([0, 0, 0, 0]);
        rec.extend(m);
        out.extend((i as u32).to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend((rec.len() as u32).to_le_bytes());
        out.extend((rec.len() as u32).to_le_bytes());
        out.extend(rec);
    }
    out
}

/// Expert lines tshark prints that are not natm's fault (atm-facts §5.5, §10).
fn known_false_positive(line: &str) -> bool {
    line.contains("Unknown AAL parameter")
        || line.contains("Unknown ATM traffic descriptor element")
}

#[test]
fn tshark_decodes_random_messages() {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let mut s = Sampler::new(2931);
    let messages: Vec<Message> = (0..1000).map(|_| wireshark_message(&mut s)).collect();
    let bytes: Vec<Vec<u8>> = messages.iter().map(Message::to_vec).collect();
    let dir = std::env::temp_dir().join(format!("natm-q2931-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("q2931.pcap");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&pcap(&bytes))
        .unwrap();
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(&path)
        .args(["-V", "-o", "gui.max_tree_depth:100"])
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut frame = 0usize;
    let mut bad = Vec::new();
    for line in text.lines() {
        if line.starts_with("Frame ") {
            frame = line
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.trim_end_matches(':').parse().ok())
                .unwrap_or(0);
        }
        let expert = line.contains("[Expert Info") || line.contains("Malformed");
        if expert && !known_false_positive(line) {
            bad.push(format!("frame {frame}: {}", line.trim()));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // Every record reached the q2931 dissector.
    let decoded = text.lines().filter(|l| *l == "Q.2931").count();
    assert_eq!(decoded, messages.len(), "records tshark decoded as Q.2931");
    if !bad.is_empty() {
        for b in bad.iter().take(20) {
            let i = b
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.trim_end_matches(':').parse::<usize>().ok())
                .unwrap_or(1);
            let m = &messages[i.saturating_sub(1)];
            let hex: String = m.to_vec().iter().map(|x| format!("{x:02x}")).collect();
            eprintln!("{b}\n    message: {m}\n    bytes: {hex}");
        }
        panic!("{} tshark complaints", bad.len());
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
