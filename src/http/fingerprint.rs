//! The fingerprint of a mutating request: SHA-256 over its method, path and canonical JSON body.
//! A retry that differs only in key order or whitespace is the same request; one with another
//! body, endpoint or order is not.

use sha2::{Digest, Sha256};

use crate::domain::Fingerprint;

/// The hex-encoded SHA-256 of method, path and the canonical form of `body`.
pub fn of_request(method: &str, path: &str, body: &serde_json::Value) -> Fingerprint {
    let mut canonical = String::new();
    write_canonical(body, &mut canonical);
    let mut hasher = Sha256::new();
    hasher.update(method.as_bytes());
    hasher.update(b"\n");
    hasher.update(path.as_bytes());
    hasher.update(b"\n");
    hasher.update(canonical.as_bytes());
    Fingerprint::new(hex::encode(hasher.finalize()))
}

/// JSON with object keys sorted and no insignificant whitespace, whatever order the client used.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
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
    fn the_fingerprint_covers_method_path_and_body() {
        let body = json!({"a": 1});
        let base = of_request("POST", "/v1/orders", &body);
        assert_ne!(base, of_request("PUT", "/v1/orders", &body));
        assert_ne!(base, of_request("POST", "/v1/other", &body));
        assert_ne!(base, of_request("POST", "/v1/orders", &json!({"a": 2})));
    }
}
