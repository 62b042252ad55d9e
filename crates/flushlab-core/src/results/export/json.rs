use super::Exporter;
use crate::results::BenchResults;

/// Everything, raw runs included, so results can be compared later.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>> {
        let mut json = serde_json::to_vec_pretty(results)?;
        json.push(b'\n');
        Ok(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_snapshot() {
        let bytes = JsonExporter
            .serialize(&crate::results::export::fixture::results())
            .unwrap();
        insta::assert_snapshot!(String::from_utf8(bytes).unwrap());
    }
}
