//! Ports for what a test starts (servers, nodes, service processes): free now, and handed to
//! one caller of the process only.

/// Where [`free_port`] draws the ports of what a test starts (servers, nodes, instances).
const FREE_PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A port nothing listens on, drawn below the kernel's ephemeral range (32768 and up on Linux):
/// a port from that range, released for a node to bind later, may meanwhile become the local
/// end of some outgoing connection on the machine, and the node would fail to start.
pub fn free_port() -> u16 {
    loop {
        let port = FREE_PORTS.start
            + (getrandom::u32().expect("randomness") % u32::from(FREE_PORTS.end - FREE_PORTS.start))
                as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() && taken(port) {
            return port;
        }
    }
}

/// Takes `port` for this test if no other caller of [`free_port`] in this process has.
fn taken(port: u16) -> bool {
    static TAKEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut taken = TAKEN.lock().expect("ports");
    if taken.contains(&port) {
        return false;
    }
    taken.push(port);
    true
}
