//! The fingerprint of a mutating request: SHA-256 over its method, path and canonical JSON body.
//! A retry that differs only in key order or whitespace is the same request; one with another
//! body, endpoint or order is not. Both doors that take Idempotency-Keys compute it: the REST API
//! over the request it received, the `dead-letters` command line over the REST request an action
//! stands for, so that a retry answers alike through either.

use sha2::{Digest, Sha256};

use crate::domain::Fingerprint;

/// The hex-encoded SHA-256 of method, path and the canonical form of `body`.
pub fn of_request(method: &str, path: &str, body: &serde_json::Value) -> Fingerprint {
    let mut canonical = Vec::new();
    write_canonical(body, &mut canonical);
    let mut hasher = Sha256::new();
    hasher.update(method.as_bytes());
    hasher.update(b"\n");
    hasher.update(path.as_bytes());
    hasher.update(b"\n");
    hasher.update(&canonical);
    // sha2's digest writes its lowercase hex whole; `hex::encode` builds it a `char` at a time.
    Fingerprint::new(format!("{:x}", hasher.finalize()))
}

/// JSON with object keys sorted and no insignificant whitespace, whatever order the client used.
/// Keys and scalars are written as serde_json writes them, straight into `out`.
fn write_canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(key, out);
                out.push(b':');
                write_canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_json(scalar, out),
    }
}

/// `value` as compact JSON, appended to `out`.
fn write_json(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string, number, bool or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fingerprint_ignores_key_order_and_whitespace() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b: serde_json::Value =
            serde_json::from_str(r#"{ "a" : {"x":"s","y":[1,2]}, "b":1 }"#).unwrap();
        assert_eq!(
            of_request("POST", "/v1/orders", &a),
            of_request("POST", "/v1/orders", &b)
        );
    }

    #[test]
    fn the_canonical_form_is_compact_sorted_json() {
        let body: serde_json::Value = serde_json::from_str(
            r#"{ "b": [true, null, 1.5, "q\"é"], "a\n": {"z": -1, "y": {}} }"#,
        )
        .unwrap();
        let mut canonical = Vec::new();
        write_canonical(&body, &mut canonical);
        assert_eq!(
            String::from_utf8(canonical).unwrap(),
            r#"{"a\n":{"y":{},"z":-1},"b":[true,null,1.5,"q\"é"]}"#
        );
        // Fingerprints are stored with the requests they identify, forever: this one was computed
        // independently (Python's json.dumps with sorted keys, compact separators, and hashlib).
        assert_eq!(
            of_request("POST", "/v1/orders", &body).as_str(),
            "8c0252dc326191cde126efc3973c5112ee7bf4c164a43e0089f76b2e8ee06667"
        );
    }

    #[test]
    fn the_fingerprint_covers_method_path_and_body() {
        let body = json!({"a": 1});
        let base = of_request("POST", "/v1/orders", &body);
        assert_ne!(base, of_request("PUT", "/v1/orders", &body));
        assert_ne!(base, of_request("POST", "/v1/other", &body));
        assert_ne!(base, of_request("POST", "/v1/orders", &json!({"a": 2})));
    }
}
