//! The `limit` and `after` query of a listing, read into a page of the application's
//! (`app/page_tokens.rs`), and the 400 for either when it is refused.

use serde::Deserialize;
use utoipa::IntoParams;

use super::problem::Problem;
use crate::app::PageAfter;
use crate::app::page_tokens::{self, PageRefused, Token};

/// The query of a page of an order's records: `GET /v1/orders/{id}/history`, `…/payments`,
/// `…/events`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page size, 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u16>,
    /// The `next` cursor of the previous page.
    after: Option<String>,
}

impl PageParams {
    /// The page asked for, or the 400 for its `limit` or `after`.
    pub fn page<T: Token>(&self) -> Result<PageAfter<T>, Problem> {
        let (limit, after) = page_tokens::page(self.limit, self.after.as_deref())?;
        Ok(PageAfter { limit, after })
    }
}

impl From<PageRefused> for Problem {
    fn from(refused: PageRefused) -> Self {
        let slug = match refused {
            PageRefused::Limit => "invalid-query",
            PageRefused::After => "invalid-cursor",
        };
        Problem::bad_request(slug, refused.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{DEFAULT_PAGE, MAX_PAGE};

    #[test]
    fn the_documented_page_bounds_are_the_constants() {
        let params = PageParams::into_params(|| None);
        let schema = |name: &str| {
            let param = params.iter().find(|p| p.name == name).unwrap();
            serde_json::to_value(param).unwrap()
        };
        let limit = schema("limit");
        assert_eq!(limit["schema"]["minimum"], 1, "{limit}");
        assert_eq!(limit["schema"]["maximum"], MAX_PAGE, "{limit}");
        let described = limit["description"].as_str().unwrap();
        assert!(
            described.contains(&format!("1–{MAX_PAGE} (default {DEFAULT_PAGE})")),
            "{described}"
        );
    }
}
