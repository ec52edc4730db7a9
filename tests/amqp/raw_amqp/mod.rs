//! A publisher that writes AMQP 0-9-1 frames byte by byte, as a hostile or buggy client would:
//! the content header's properties are whatever bytes the test gives, so a test can send what
//! no well-behaved client library would encode (headers nested to the frame's limit, a short
//! string that is not UTF-8). It speaks just enough of the protocol to publish with publisher
//! confirms: handshake (PLAIN), one channel, `confirm.select`, `basic.publish`, close. The
//! field tables a test puts in the headers are encoded in `field_tables.rs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

mod field_tables;

pub use field_tables::{
    Random, deepest_arrays, long_string, nested_arrays, nested_tables, random_table, table,
};

/// The property flags of a content header (AMQP 0-9-1 §4.2.6.1), in the order their values
/// follow one another.
pub const FLAG_HEADERS: u16 = 0x2000;
pub const FLAG_DELIVERY_MODE: u16 = 0x1000;
pub const FLAG_MESSAGE_ID: u16 = 0x0080;

/// RabbitMQ's default `frame_max`: the largest a content header frame may be.
pub const FRAME_MAX: usize = 128 * 1024;

/// A message as raw frames: the properties' flags and their encoded values, and a body.
pub struct RawMessage {
    pub flags: u16,
    pub properties: Vec<u8>,
    pub body: Vec<u8>,
}

impl RawMessage {
    /// Persistent, with `headers` (an encoded field table) as its only other property.
    pub fn with_headers(headers: Vec<u8>, body: &[u8]) -> Self {
        let mut properties = headers;
        properties.push(2);
        Self {
            flags: FLAG_HEADERS | FLAG_DELIVERY_MODE,
            properties,
            body: body.to_vec(),
        }
    }

    /// Persistent, with `message_id` as raw bytes (a short string: at most 255 of them).
    pub fn with_message_id(message_id: &[u8], body: &[u8]) -> Self {
        let mut properties = vec![2, u8::try_from(message_id.len()).expect("a short string")];
        properties.extend_from_slice(message_id);
        Self {
            flags: FLAG_DELIVERY_MODE | FLAG_MESSAGE_ID,
            properties,
            body: body.to_vec(),
        }
    }
}

/// Publishes each message to `exchange` with `routing_key` over a connection of its own, and
/// waits for the broker's confirm of each; panics if the broker refuses one.
pub fn publish(
    amqp_addr: &str,
    vhost: &str,
    exchange: &str,
    routing_key: &str,
    messages: &[RawMessage],
) {
    let mut stream = TcpStream::connect(amqp_addr).expect("connect to RabbitMQ");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream
        .write_all(b"AMQP\x00\x00\x09\x01")
        .expect("protocol header");
    expect_method(&mut stream, 10, 10); // connection.start
    let mut start_ok = method(10, 11);
    start_ok.extend_from_slice(&len32(0)); // client properties: none
    short(&mut start_ok, b"PLAIN");
    long(&mut start_ok, b"\0guest\0guest");
    short(&mut start_ok, b"en_US");
    send(&mut stream, 1, 0, &start_ok);
    let tune = expect_method(&mut stream, 10, 30);
    let mut tune_ok = method(10, 31);
    tune_ok.extend_from_slice(&tune[0..2]); // channel max, as offered
    tune_ok.extend_from_slice(&len32(FRAME_MAX));
    tune_ok.extend_from_slice(&[0, 0]); // no heartbeats
    send(&mut stream, 1, 0, &tune_ok);
    let mut open = method(10, 40);
    short(&mut open, vhost.as_bytes());
    short(&mut open, b"");
    open.push(0);
    send(&mut stream, 1, 0, &open);
    expect_method(&mut stream, 10, 41);
    let mut channel_open = method(20, 10);
    short(&mut channel_open, b"");
    send(&mut stream, 1, 1, &channel_open);
    expect_method(&mut stream, 20, 11);
    let mut select = method(85, 10);
    select.push(0);
    send(&mut stream, 1, 1, &select);
    expect_method(&mut stream, 85, 11);

    for message in messages {
        let mut publish = method(60, 40);
        publish.extend_from_slice(&[0, 0]);
        short(&mut publish, exchange.as_bytes());
        short(&mut publish, routing_key.as_bytes());
        publish.push(0);
        send(&mut stream, 1, 1, &publish);
        let mut header = vec![0, 60, 0, 0];
        header.extend_from_slice(&(message.body.len() as u64).to_be_bytes());
        header.extend_from_slice(&message.flags.to_be_bytes());
        header.extend_from_slice(&message.properties);
        assert!(
            header.len() + 8 <= FRAME_MAX,
            "the content header fits one frame"
        );
        send(&mut stream, 2, 1, &header);
        for chunk in message.body.chunks(FRAME_MAX - 8) {
            send(&mut stream, 3, 1, chunk);
        }
        expect_method(&mut stream, 60, 80); // basic.ack: confirmed
    }

    let mut close = method(10, 50);
    close.extend_from_slice(&[0, 200]);
    short(&mut close, b"bye");
    close.extend_from_slice(&[0, 0, 0, 0]);
    send(&mut stream, 1, 0, &close);
    expect_method(&mut stream, 10, 51);
}

fn len32(n: usize) -> [u8; 4] {
    u32::try_from(n).expect("fits 32 bits").to_be_bytes()
}

fn method(class: u16, method: u16) -> Vec<u8> {
    let mut payload = class.to_be_bytes().to_vec();
    payload.extend_from_slice(&method.to_be_bytes());
    payload
}

fn short(out: &mut Vec<u8>, text: &[u8]) {
    out.push(u8::try_from(text.len()).expect("a short string"));
    out.extend_from_slice(text);
}

fn long(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(&len32(text.len()));
    out.extend_from_slice(text);
}

fn send(stream: &mut TcpStream, kind: u8, channel: u16, payload: &[u8]) {
    let mut frame = vec![kind];
    frame.extend_from_slice(&channel.to_be_bytes());
    frame.extend_from_slice(&len32(payload.len()));
    frame.extend_from_slice(payload);
    frame.push(0xCE);
    stream.write_all(&frame).expect("send a frame");
}

/// Reads frames until a method frame arrives; panics unless it is `class.method` (a close from
/// the broker names why). Returns its arguments.
fn expect_method(stream: &mut TcpStream, class: u16, method: u16) -> Vec<u8> {
    loop {
        let mut head = [0u8; 7];
        stream.read_exact(&mut head).expect("read a frame header");
        let size = u32::from_be_bytes([head[3], head[4], head[5], head[6]]) as usize;
        let mut payload = vec![0u8; size + 1];
        stream.read_exact(&mut payload).expect("read a frame");
        payload.pop();
        if head[0] != 1 {
            continue; // a heartbeat or content: not what we wait for
        }
        let got = (
            u16::from_be_bytes([payload[0], payload[1]]),
            u16::from_be_bytes([payload[2], payload[3]]),
        );
        if got == (class, method) {
            return payload[4..].to_vec();
        }
        let text = String::from_utf8_lossy(&payload[4..]).into_owned();
        panic!("expected method {class}.{method}, the broker sent {got:?}: {text}");
    }
}
