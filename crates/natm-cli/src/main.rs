//! `natm`: the command-line front end of natm.
//!
//! Each subcommand lives in its own module under `cmd/` and returns a [`CmdResult`]; `main`
//! turns an error into a one-line message on stderr and exit status 2 (bad input) or 1
//! (a refusal or failure the command reports).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// A command's failure: what to print and how to exit.
#[derive(Debug)]
pub struct CliError {
    /// Exit status: 2 for bad input, 1 for other failures.
    pub code: u8,
    /// One line, without the program name.
    pub message: String,
}

impl CliError {
    /// Bad input from the user (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }
    /// A failure that is not the user's input (exit 1).
    pub fn failure(message: impl Into<String>) -> Self {
        CliError {
            code: 1,
            message: message.into(),
        }
    }
}

/// What every subcommand returns.
pub type CmdResult = Result<(), CliError>;

#[derive(Parser)]
#[command(
    name = "natm",
    version,
    about = "natm: a native-mode ATM network in user space"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    // Subcommands are added here, one module each under cmd/.
    /// AAL5: segment an SDU into cells and capture them.
    #[command(subcommand)]
    Aal5(cmd::aal5::Aal5Command),
    /// Print the records of a pcap capture, one line each.
    Dump(cmd::dump::DumpArgs),
    /// Quality of service in linux-atm's text form (qos(7)).
    Qos(cmd::qos::QosArgs),
    /// ATM addresses (PVC, AESA, E.164) in linux-atm's text form.
    Addr(cmd::addr::AddrArgs),
    /// Connection admission control: would a connection be admitted on a link, and why not.
    Admit(cmd::admit::AdmitArgs),
    /// Show what natm does today, step by step, on the real code.
    Demo(cmd::demo::DemoArgs),
    /// A standalone atmtcp endpoint that talks to linux-atm's `atmtcp` program.
    #[command(subcommand)]
    Atmtcp(cmd::atmtcp::AtmtcpCommand),
    /// Measure natm's parts on this machine beside kernel baselines from the same run.
    #[command(subcommand)]
    Perf(cmd::perf::PerfCommand),
    /// Bring a lab network (switches, hosts, links, PVCs) up or down, or show it.
    #[command(subcommand)]
    Lab(cmd::lab::LabCommand),
    /// Set up a switched VC to an ATM address, send, print the VC and set-up time, release.
    Call(cmd::call::CallArgs),
    /// Accept calls to a host's address and print each call and SDU (optionally echo).
    Listen(cmd::listen::ListenArgs),
    /// Send standard input over a transport channel on a PVC or a call (a netcat for natm).
    Send(cmd::transfer::SendArgs),
    /// Receive a `natm send` stream on a PVC or a call and write it to standard output.
    Recv(cmd::transfer::RecvArgs),
    /// OAM F5 loopback on a PVC, like ping.
    Ping(cmd::ping::PingArgs),
    /// Ports, VCs, channels, queues and counters of every daemon of the lab.
    Stat(cmd::stat::StatArgs),
    /// Capture the cells crossing a switch port into a pcap file.
    Capture(cmd::capture::CaptureArgs),
    /// The switch daemon, in the foreground.
    Switchd(cmd::daemon::DaemonArgs),
    /// The host daemon (adapter, channel manager), in the foreground.
    Hostd(cmd::daemon::DaemonArgs),
    /// The deterministic simulator: scenarios, seeded fault swarms, the ATLAS event builder.
    #[command(subcommand)]
    Sim(cmd::sim::SimCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `natm stat | head` ends quietly, as a Unix filter does, instead of panicking. Only
    // for the commands that just print: the daemons, and the commands that talk to them or
    // run a lab, keep SIGPIPE ignored so a vanished peer is an error they handle.
    if matches!(
        cli.command,
        Command::Stat(_)
            | Command::Dump(_)
            | Command::Qos(_)
            | Command::Addr(_)
            | Command::Admit(_)
            | Command::Ping(_)
    ) {
        let _ = natm_nic::signal::default_sigpipe();
    }
    let result: CmdResult = match cli.command {
        Command::Aal5(c) => cmd::aal5::run(c),
        Command::Dump(a) => cmd::dump::run(a),
        Command::Qos(args) => cmd::qos::run(args),
        Command::Addr(args) => cmd::addr::run(args),
        Command::Admit(args) => cmd::admit::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Atmtcp(c) => cmd::atmtcp::run(c),
        Command::Perf(c) => cmd::perf::run(c),
        Command::Lab(c) => cmd::lab::run(c),
        Command::Ping(a) => cmd::ping::run(a),
        Command::Call(a) => cmd::call::run(a),
        Command::Listen(a) => cmd::listen::run(a),
        Command::Send(a) => cmd::transfer::send(a),
        Command::Recv(a) => cmd::transfer::recv(a),
        Command::Stat(a) => cmd::stat::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Switchd(a) => cmd::daemon::switchd(a),
        Command::Hostd(a) => cmd::daemon::hostd(a),
        Command::Sim(c) => cmd::sim::run(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("natm: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}
