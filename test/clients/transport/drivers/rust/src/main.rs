//! Transport driver: reqwest's async Client (hyper 0.14 on tokio), as Lighthouse's validator
//! client uses it for web3signer keys. Speaks the line protocol of ../protocol.mjs: one JSON
//! command per line on standard input, one JSON answer per line on standard output.

use futures_util::stream::{self, StreamExt};
use serde_json::{json, Map, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const TIMEOUT: Duration = Duration::from_secs(30);

fn failure(error: &dyn std::error::Error) -> Value {
    // reqwest's Display hides the cause ("error sending request"): name every source.
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(" <- ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    json!({"status": null, "body": null, "connection": null, "keepAlive": null,
           "requestId": null, "error": text})
}

fn header(response: &reqwest::Response, name: &str) -> Value {
    match response.headers().get(name).map(|value| value.to_str()) {
        Some(Ok(value)) => Value::String(value.to_string()),
        Some(Err(_)) => Value::String("<not ASCII>".to_string()),
        None => Value::Null,
    }
}

async fn send(client: &reqwest::Client, base: &str, request: &Value, close: bool) -> Value {
    let method = request["method"].as_str().unwrap_or("GET");
    let method = match reqwest::Method::from_bytes(method.as_bytes()) {
        Ok(method) => method,
        Err(error) => return failure(&error),
    };
    let url = format!("{}{}", base, request["path"].as_str().unwrap_or("/"));
    let mut builder = client.request(method, url).timeout(TIMEOUT);
    if let Some(headers) = request["headers"].as_object() {
        for (name, value) in headers {
            builder = builder.header(name.as_str(), value.as_str().unwrap_or(""));
        }
    }
    if close {
        // hyper sends it as given and does not return the connection to the pool.
        builder = builder.header("connection", "close");
    }
    if let Some(body) = request["body"].as_str() {
        builder = builder.body(body.to_string());
    }
    let response = match builder.send().await {
        Ok(response) => response,
        Err(error) => return failure(&error),
    };
    let status = response.status().as_u16();
    let connection = header(&response, "connection");
    let keep_alive = header(&response, "keep-alive");
    let request_id = header(&response, "x-request-id");
    match response.text().await {
        Ok(body) => json!({"status": status, "body": body, "connection": connection,
                           "keepAlive": keep_alive, "requestId": request_id, "error": null}),
        Err(error) => failure(&error),
    }
}

async fn batch(client: &reqwest::Client, command: &Value) -> Value {
    let base = command["base"].as_str().unwrap_or("");
    let close = command["close"].as_bool().unwrap_or(false);
    let concurrency = command["concurrency"].as_u64().unwrap_or(1).max(1) as usize;
    let empty = Vec::new();
    let requests = command["requests"].as_array().unwrap_or(&empty);
    // `buffered` keeps request order and runs at most `concurrency` at once.
    let results: Vec<Value> = stream::iter(requests.iter())
        .map(|request| send(client, base, request, close))
        .buffered(concurrency)
        .collect()
        .await;
    json!({ "results": results })
}

#[tokio::main]
async fn main() {
    // One client for the life of the process: its pool is what the harness exercises across
    // idle timeouts and restarts. Lighthouse builds its web3signer client with reqwest's
    // defaults plus a timeout.
    let client = reqwest::Client::builder()
        .build()
        .expect("reqwest client");
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut output = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(error) => json!({"error": format!("driver: {}", error)}),
            Ok(command) => match command["op"].as_str() {
                Some("exit") => break,
                Some("version") => {
                    json!({"version": "reqwest async Client (crate versions from the build's Cargo.lock)"})
                }
                Some("batch") => batch(&client, &command).await,
                other => {
                    let mut map = Map::new();
                    map.insert("error".into(), json!(format!("unknown op {:?}", other)));
                    Value::Object(map)
                }
            },
        };
        let mut text = answer.to_string();
        text.push('\n');
        if output.write_all(text.as_bytes()).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}
