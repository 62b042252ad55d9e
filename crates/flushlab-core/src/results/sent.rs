//! Result files others send, read one way: every number checked to be a figure flushlab could
//! have measured, every text escaped, then the schema.

/// The largest number a result file may hold: a petabyte, 10^15 fps. Anything larger (or
/// negative, or not finite) was not measured by flushlab, and would stall the chart's axes.
const MAX_FIGURE: f64 = 1e15;

/// A result file someone sent, read as `T`: every number checked to be a figure flushlab could
/// have measured, then the schema. The error names the first number out of range. Every
/// string's control characters are escaped here, once: a name from the file reaches the
/// terminal, a Markdown table or an SVG chart as text, never as a command, a row or invalid XML.
pub fn from_sent_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> anyhow::Result<T> {
    fn check(value: &mut serde_json::Value, at: &mut Vec<String>) -> Result<(), String> {
        match value {
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(v) if (0.0..=MAX_FIGURE).contains(&v) => Ok(()),
                _ => Err(format!(
                    "{} is {n}, outside 0 to {MAX_FIGURE:e}",
                    crate::units::one_line(&at.join("."))
                )),
            },
            serde_json::Value::String(text) => {
                *text = crate::units::one_line(text);
                Ok(())
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().enumerate().try_for_each(|(i, v)| {
                    at.push(i.to_string());
                    let checked = check(v, at);
                    at.pop();
                    checked
                })
            }
            serde_json::Value::Object(fields) => fields.iter_mut().try_for_each(|(k, v)| {
                at.push(k.clone());
                let checked = check(v, at);
                at.pop();
                checked
            }),
            _ => Ok(()),
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
    check(&mut value, &mut Vec::new()).map_err(anyhow::Error::msg)?;
    Ok(serde_json::from_value(value)?)
}
