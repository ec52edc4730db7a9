//! Money in integer minor units, never floats, always with its ISO 4217 currency.

use std::fmt;

use super::text::ValidationError;

/// The active ISO 4217 alphabetic codes (2024 list, including funds codes and precious metals).
/// A code not in this list is rejected: a typo in a currency is a client error, not a new currency.
const ISO_4217: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD",
    "CAD", "CDF", "CHE", "CHF", "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUC", "CUP",
    "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP",
    "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS",
    "INR", "IQD", "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW",
    "KWD", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD",
    "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN",
    "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR",
    "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS",
    "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY", "TTD",
    "TWD", "TZS", "UAH", "UGX", "USD", "USN", "UYI", "UYU", "UYW", "UZS", "VED", "VES", "VND",
    "VUV", "WST", "XAF", "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XCD", "XCG", "XDR", "XOF",
    "XPD", "XPF", "XPT", "XSU", "XUA", "YER", "ZAR", "ZMW", "ZWG", "ZWL",
];

/// An ISO 4217 currency code: three upper-case letters from the active list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency([u8; 3]);

impl Currency {
    pub fn parse(value: &str) -> Result<Self, ValidationError> {
        let bytes: [u8; 3] = value
            .as_bytes()
            .try_into()
            .map_err(|_| ValidationError::new("currency", "must be 3 upper-case letters"))?;
        if !bytes.iter().all(u8::is_ascii_uppercase) {
            return Err(ValidationError::new(
                "currency",
                "must be 3 upper-case letters",
            ));
        }
        if ISO_4217.binary_search(&value).is_err() {
            return Err(ValidationError::new(
                "currency",
                format!("{value} is not an ISO 4217 currency"),
            ));
        }
        Ok(Self(bytes))
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII upper-case letters are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("???")
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A positive amount in minor units (cents, pence, yen), `1 ..= 10^12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AmountMinor(i64);

impl AmountMinor {
    pub const MAX: i64 = 1_000_000_000_000;

    pub fn parse(value: i64) -> Result<Self, ValidationError> {
        if (1..=Self::MAX).contains(&value) {
            Ok(Self(value))
        } else {
            Err(ValidationError::new(
                "amount_minor",
                format!("must be between 1 and {}, got {value}", Self::MAX),
            ))
        }
    }

    pub fn get(&self) -> i64 {
        self.0
    }
}

/// The largest sum of money one order holds: `paid_minor`, and with it `refunded_minor` (never
/// more than was paid) and the refund due. 2^53 − 1 is the largest integer a JSON number read as
/// a double (JavaScript, the console, most JSON libraries) carries exactly, so every figure the
/// API, the events and the console carry stays exact (docs/contract.md "Money").
pub const MAX_SUM_MINOR: i64 = (1 << 53) - 1;

/// An amount with its currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    pub minor: AmountMinor,
    pub currency: Currency,
}

impl Money {
    pub fn new(minor: AmountMinor, currency: Currency) -> Self {
        Self { minor, currency }
    }

    /// Money as both doors receive it: an integer of minor units and a currency code.
    pub fn parse(minor: i64, currency: &str) -> Result<Self, ValidationError> {
        Ok(Self::new(
            AmountMinor::parse(minor)?,
            Currency::parse(currency)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_currency_list_is_sorted_so_binary_search_works() {
        assert!(ISO_4217.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn currency_accepts_known_upper_case_codes_only() {
        assert_eq!(Currency::parse("EUR").unwrap().as_str(), "EUR");
        assert!(Currency::parse("eur").is_err());
        assert!(Currency::parse("EURO").is_err());
        assert!(Currency::parse("ABC").is_err());
        assert!(Currency::parse("").is_err());
    }

    #[test]
    fn amount_is_between_one_and_ten_to_the_twelfth() {
        assert!(AmountMinor::parse(1).is_ok());
        assert!(AmountMinor::parse(AmountMinor::MAX).is_ok());
        assert!(AmountMinor::parse(0).is_err());
        assert!(AmountMinor::parse(-5).is_err());
        assert!(AmountMinor::parse(AmountMinor::MAX + 1).is_err());
    }

    #[test]
    fn the_largest_sum_is_the_largest_integer_a_double_holds_exactly() {
        assert_eq!(MAX_SUM_MINOR, 9_007_199_254_740_991);
        // Precision is lost one past it: a double cannot tell 2^53 + 1 from 2^53.
        assert_eq!((MAX_SUM_MINOR as f64) as i64, MAX_SUM_MINOR);
        assert_eq!(((MAX_SUM_MINOR + 2) as f64) as i64, MAX_SUM_MINOR + 1);
    }

    #[test]
    fn money_needs_both_a_valid_amount_and_a_valid_currency() {
        let money = Money::parse(4999, "EUR").unwrap();
        assert_eq!((money.minor.get(), money.currency.as_str()), (4999, "EUR"));
        assert_eq!(Money::parse(0, "EUR").unwrap_err().field, "amount_minor");
        assert_eq!(Money::parse(1, "eur").unwrap_err().field, "currency");
    }
}
