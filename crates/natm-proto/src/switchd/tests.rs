use super::*;
use proptest::prelude::*;

fn status() -> SwitchStatus {
    SwitchStatus {
        name: "s1".into(),
        pid: 4242,
        uptime_s: 1.5,
        memory: Some(8 << 20),
        state_bytes_per_connection: 96,
        capture_overflow: 3,
        ports: vec![
            PortStatus {
                id: 1,
                link: "shm /tmp/p1.sock".into(),
                up: true,
                attached: true,
                counters: PortCounters {
                    cells_in: 10,
                    cells_out: 9,
                    dropped: 1,
                    ais_sent: 2,
                    ..PortCounters::default()
                },
                queue_depth: QueueDepth {
                    cbr: 1,
                    rt_vbr: 2,
                    nrt_vbr: 3,
                    ubr: 4,
                },
                link_counters: Some(LinkCounters {
                    tx_cells: 9,
                    rx_cells: 10,
                    ..LinkCounters::default()
                }),
                link_warning: Some("socket buffers smaller".into()),
                held: 5,
                connects: 1,
                last_error: Some("peer gone".into()),
                lanes: vec![LaneStatus {
                    vcs: vec!["0.100".into(), "0.101".into()],
                    rx: 7,
                    weight: 23,
                    ..LaneStatus::default()
                }],
                main_weight: Some(4),
                ..PortStatus::default()
            },
            PortStatus {
                id: 2,
                ..PortStatus::default()
            },
        ],
        connections: vec![ConnectionStatus {
            id: "3.1".into(),
            a: "1:0.101".into(),
            b: "2:0.101".into(),
            qos: "cbr:pcr=1000".into(),
            category: Some(Category::RtVbr),
            upc: Upc::Tag,
            aal5: true,
            weight: 2,
            a_to_b: DirCounters {
                cells_in: 100,
                queued: 4,
                ..DirCounters::default()
            },
            b_to_a: DirCounters::default(),
        }],
        signalling: Some(Box::new(SignallingStatus {
            prefix: "47.0005.80FFE1000000F21A3599".into(),
            calls_active: 1,
            calls_connected: 5,
            calls_refused: 2,
            state_bytes_per_call: 700,
            ports: vec![SignallingPort {
                port: 1,
                side: "network".into(),
                sscop: "data-transfer-ready".into(),
                link_up: true,
                calls: 1,
                establishments: 1,
                ..Default::default()
            }],
            calls: vec![SwitchCall {
                a: "1:0.32768".into(),
                b: "2:?".into(),
                state: "proceeding".into(),
                qos: "ubr".into(),
                called: "47.0005.80FFE1000000F21A3599.0020481A3599.00".into(),
                calling: None,
                age_ms: 12,
            }],
        })),
    }
}

fn every_request() -> Vec<Request> {
    vec![
        Request::Status,
        Request::Connect(Connect {
            a: "1:0.101".into(),
            b: "2:0.201".into(),
            qos: "cbr:pcr=100000".into(),
            ..Connect::default()
        }),
        Request::Connect(Connect {
            a: "1:5".into(),
            b: "2:6".into(),
            qos: "ubr".into(),
            upc: Some("discard".into()),
            aal5: Some(false),
            weight: Some(3),
            category: Some("nrt-vbr".into()),
        }),
        Request::Disconnect { id: "3.1".into() },
        Request::Capture { port: 1, vc: None },
        Request::Capture {
            port: 65535,
            vc: Some("0.100".into()),
        },
        Request::Shutdown,
    ]
}

fn every_response() -> Vec<Response> {
    let mut empty = status();
    empty.memory = None;
    empty.ports.clear();
    empty.connections.clear();
    empty.signalling = None;
    vec![
        Response::Status(status()),
        Response::Status(empty),
        Response::Connected { id: "3.1".into() },
        Response::Disconnected,
        Response::Capturing {
            port: 7,
            unseen: Vec::new(),
        },
        Response::Capturing {
            port: 2,
            unseen: vec!["0.100".into(), "1.33".into()],
        },
        Response::ShuttingDown,
        Response::Error(Refusal::new(ErrorKind::Refused, "CAC: port 3 is full")),
        Response::Error(Refusal::new(ErrorKind::PermissionDenied, "no")),
    ]
}

#[test]
fn every_request_round_trips() {
    let mut ops = Vec::new();
    for req in every_request() {
        let line = encode_request(&req);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(decode_request(line.as_bytes()), Ok(req.clone()), "{line}");
        ops.push(line.split('"').nth(3).unwrap().to_string());
    }
    ops.dedup();
    assert_eq!(ops, Request::OPS, "every op is covered, in OPS order");
}

#[test]
fn every_response_round_trips() {
    for resp in every_response() {
        let line = encode_response(&resp);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(decode_response(line.as_bytes()).unwrap(), resp, "{line}");
    }
}

#[test]
fn every_error_kind_round_trips() {
    use ErrorKind::*;
    for kind in [
        BadJson,
        NoOp,
        UnknownOp,
        BadRequest,
        NotFound,
        Refused,
        PermissionDenied,
        LineTooLong,
    ] {
        let resp = Response::Error(Refusal::new(kind, format!("{kind}")));
        let line = encode_response(&resp);
        assert_eq!(decode_response(line.as_bytes()).unwrap(), resp, "{line}");
    }
}

#[test]
fn the_wire_keeps_its_documented_shape() {
    // What scripts and the tests that read raw lines rely on: "ok", "error" as a string,
    // the reply's fields at the top level.
    assert_eq!(
        encode_request(&Request::Capture {
            port: 1,
            vc: Some("0.100".into())
        }),
        "{\"op\":\"capture\",\"port\":1,\"vc\":\"0.100\"}\n"
    );
    assert_eq!(
        encode_response(&Response::Connected { id: "3.1".into() }),
        "{\"ok\":true,\"op\":\"connected\",\"id\":\"3.1\"}\n"
    );
    assert_eq!(
        encode_response(&Response::Capturing {
            port: 1,
            unseen: Vec::new()
        }),
        "{\"ok\":true,\"op\":\"capturing\",\"capturing\":1}\n"
    );
    assert_eq!(
        encode_response(&Response::Capturing {
            port: 1,
            unseen: vec!["0.100".into()]
        }),
        "{\"ok\":true,\"op\":\"capturing\",\"capturing\":1,\"unseen\":[\"0.100\"]}\n"
    );
    assert_eq!(
        encode_response(&Response::Error(Refusal::new(
            ErrorKind::NotFound,
            "no port 9"
        ))),
        "{\"ok\":false,\"op\":\"error\",\"kind\":\"not_found\",\"error\":\"no port 9\"}\n"
    );
    let line = encode_response(&Response::Status(status()));
    assert!(
        line.starts_with("{\"ok\":true,\"op\":\"status\",\"name\":\"s1\","),
        "{line}"
    );
    for needle in [
        "\"queue_depth\":{\"cbr\":1,\"rt-vbr\":2,\"nrt-vbr\":3,\"ubr\":4}",
        "\"category\":\"rt-vbr\"",
        "\"upc\":\"tag\"",
        "\"link_counters\":null",
        "\"last_error\":null",
    ] {
        assert!(line.contains(needle), "{needle} in {line}");
    }
}

#[test]
fn the_old_requests_still_parse() {
    // Requests as scripts wrote them before the types: spaces, a null vc, any key order.
    assert_eq!(
        decode_request(b"{\"port\": 2, \"op\": \"capture\", \"vc\": null}\n"),
        Ok(Request::Capture { port: 2, vc: None })
    );
    assert_eq!(
        decode_request(
            b"{\"op\":\"connect\",\"a\":\"1:0.1\",\"b\":\"2:0.1\",\"qos\":\"ubr\",\"upc\":\"tag\"}"
        ),
        Ok(Request::Connect(Connect {
            a: "1:0.1".into(),
            b: "2:0.1".into(),
            qos: "ubr".into(),
            upc: Some("tag".into()),
            ..Connect::default()
        }))
    );
}

#[test]
fn a_bad_request_is_a_refusal_that_names_what_is_wrong() {
    let cases: [(&[u8], ErrorKind, &str); 11] = [
        (b"this is not json", ErrorKind::BadJson, "bad JSON"),
        (b"{\"op\": 7}", ErrorKind::NoOp, "\"op\""),
        (b"{}", ErrorKind::NoOp, "\"op\""),
        (b"[1, 2]", ErrorKind::NoOp, "\"op\""),
        (b"\"status\"", ErrorKind::NoOp, "\"op\""),
        (
            b"{\"op\": \"fly\"}",
            ErrorKind::UnknownOp,
            "unknown op \"fly\" (status, connect",
        ),
        (
            b"{\"op\": \"connect\", \"a\": \"1:0.300\"}",
            ErrorKind::BadRequest,
            "connect: missing field \"b\"",
        ),
        (
            b"{\"op\": \"capture\"}",
            ErrorKind::BadRequest,
            "missing field \"port\"",
        ),
        (
            b"{\"op\": \"capture\", \"port\": 70000}",
            ErrorKind::BadRequest,
            "u16",
        ),
        (
            b"{\"op\": \"disconnect\", \"id\": 3}",
            ErrorKind::BadRequest,
            "disconnect: invalid type",
        ),
        (
            b"{\"op\": \"connect\", \"a\": \"x\", \"b\": \"y\", \"qos\": \"ubr\", \"wieght\": 2}",
            ErrorKind::BadRequest,
            "unknown field \"wieght\"",
        ),
    ];
    for (line, kind, needle) in cases {
        let text = String::from_utf8_lossy(line);
        let e = decode_request(line).expect_err(&text);
        assert_eq!(e.kind, kind, "{text}: {e}");
        assert!(e.message.contains(needle), "{text}: {e}");
    }
    // An operation without fields takes no notice of extra ones (serde's unit variants
    // of an internally tagged enum, as in hostd's protocol).
    assert_eq!(
        decode_request(b"{\"op\": \"status\", \"verbose\": true}"),
        Ok(Request::Status)
    );
}

#[test]
fn a_response_whose_ok_disagrees_or_that_is_unknown_is_an_error() {
    for line in [
        "{\"ok\":false,\"op\":\"disconnected\"}",
        "{\"ok\":true,\"op\":\"error\",\"kind\":\"refused\",\"error\":\"x\"}",
        "{\"ok\":true,\"op\":\"teleported\"}",
        "{\"ok\":true}",
        "{\"op\":\"disconnected\"}",
        "{\"ok\":false,\"error\":\"the old shape, without kind\"}",
        "not json",
    ] {
        assert!(decode_response(line.as_bytes()).is_err(), "{line}");
    }
}

#[test]
fn a_capture_line_round_trips_as_hex() {
    let mut cell = [0u8; 53];
    cell[0] = 0xAB;
    cell[52] = 0x0F;
    let c = CaptureLine {
        t_ns: 1_007,
        dir: CaptureDir::Out,
        cell,
    };
    let text = serde_json::to_string(&c).unwrap();
    let hex = format!("ab{}0f", "00".repeat(51));
    assert_eq!(
        text,
        format!("{{\"t_ns\":1007,\"dir\":\"out\",\"cell\":\"{hex}\"}}")
    );
    assert_eq!(serde_json::from_str::<CaptureLine>(&text).unwrap(), c);
    for bad in [
        "{\"t_ns\":1,\"dir\":\"out\",\"cell\":\"ab\"}".to_string(),
        format!("{{\"t_ns\":1,\"dir\":\"up\",\"cell\":\"{hex}\"}}"),
        format!("{{\"t_ns\":1,\"dir\":\"in\",\"cell\":\"zz{}\"}}", &hex[2..]),
        format!("{{\"t_ns\":1,\"dir\":\"in\",\"cell\":\"é{}\"}}", &hex[3..]),
    ] {
        assert!(serde_json::from_str::<CaptureLine>(&bad).is_err(), "{bad}");
    }
}

proptest! {
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_request(&bytes);
        let _ = decode_response(&bytes);
        let _ = serde_json::from_slice::<CaptureLine>(&bytes);
    }

    #[test]
    fn requests_with_any_texts_round_trip(a in ".*", q in ".*", port in any::<u16>(), w in any::<Option<u32>>()) {
        for req in [
            Request::Connect(Connect { a: a.clone(), b: q.clone(), qos: q.clone(), weight: w, ..Connect::default() }),
            Request::Disconnect { id: a.clone() },
            Request::Capture { port, vc: Some(q.clone()) },
        ] {
            prop_assert_eq!(decode_request(encode_request(&req).as_bytes()), Ok(req));
        }
    }
}
