//! serde's error texts as a client may read them: without the Rust types they name.

/// serde's account of a value that does not fit, in words a client can act on: when it names
/// the Rust type it expected (`expected i64`, `expected struct PaymentRequest with 3 elements`,
/// `expected enum …`, a path with `::`), that part is replaced by the JSON it stands for.
pub fn client_text(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let Some((found, expected)) = text.split_once(", expected ") else {
        return if names_a_type(&text) {
            SHAPELESS.to_owned()
        } else {
            text
        };
    };
    let shape = if let Some(json) = primitive_as_json(expected) {
        json
    } else if expected.contains("struct ") {
        "a JSON object"
    } else if names_a_type(expected) {
        "another value"
    } else {
        expected
    };
    if names_a_type(found) {
        return SHAPELESS.to_owned();
    }
    format!("{found}, expected {shape}")
}

/// What a text says when all it could say would name a Rust type.
const SHAPELESS: &str = "a value does not have the documented shape";

fn names_a_type(text: &str) -> bool {
    text.contains("struct ") || text.contains("enum ") || text.contains("::")
}

/// The JSON a Rust primitive type that serde names as expected stands for.
fn primitive_as_json(expected: &str) -> Option<&'static str> {
    match expected {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => Some("an integer"),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => Some("a non-negative integer"),
        "f32" | "f64" => Some("a number"),
        "char" => Some("a single character"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde::de;

    use super::*;

    #[test]
    fn serde_texts_naming_a_type_are_rewritten() {
        let error = |text: &str| <serde_json::Error as de::Error>::custom(text);
        for (serde, client) in [
            (
                "invalid length 0, expected struct PlaceOrderRequest with 4 elements",
                "invalid length 0, expected a JSON object",
            ),
            (
                "invalid type: string \"x\", expected enum DeadLetterStatusView",
                "invalid type: string \"x\", expected another value",
            ),
            (
                "a crate::domain::Money went wrong",
                "a value does not have the documented shape",
            ),
            (
                "invalid type: sequence, expected i64",
                "invalid type: sequence, expected an integer",
            ),
            (
                "invalid value: integer `-1`, expected u16",
                "invalid value: integer `-1`, expected a non-negative integer",
            ),
            ("missing field `name`", "missing field `name`"),
            (
                "invalid type: map, expected a string",
                "invalid type: map, expected a string",
            ),
        ] {
            assert_eq!(client_text(&error(serde)), client);
        }
    }
}
