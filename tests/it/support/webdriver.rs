//! A W3C WebDriver client over reqwest, enough to drive the operator's page in Debian's
//! headless Chromium through chromedriver: open a URL, find elements by CSS, type, click, read
//! text and attributes, run a line of script, and take a screenshot.

use base64::Engine;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// chromedriver on a free loopback port, stopped when dropped.
pub struct Driver {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian's chromium-driver, installed by .ci/run) starts");
        let driver = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let started = Instant::now();
        loop {
            let ready = driver
                .http
                .get(format!("{}/status", driver.base))
                .send()
                .await;
            if let Ok(res) = ready {
                let status: Value = res.json().await.unwrap_or(Value::Null);
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not get ready"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A headless Chromium session, as this machine's closed network needs it.
    pub async fn session(&self) -> Session {
        let profile =
            std::env::temp_dir().join(format!("chromium-{}", crate::support::uuid_like()));
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--window-size=1280,2200".into(),
            format!("--user-data-dir={}", profile.display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}});
        let res: Value = self
            .http
            .post(format!("{}/session", self.base))
            .json(&caps)
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("JSON");
        let id = res["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {res}"));
        Session {
            base: format!("{}/session/{id}", self.base),
            http: self.http.clone(),
        }
    }
}

pub struct Session {
    base: String,
    http: reqwest::Client,
}

/// An element of the page.
#[derive(Clone, Debug)]
pub struct Element(String);

impl Session {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res: Value = req
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("JSON");
        res["value"].clone()
    }

    pub async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The first element `css` finds, waiting up to 20 s for it.
    pub async fn find(&self, css: &str) -> Element {
        let started = Instant::now();
        loop {
            let found = self
                .call(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            if let Some(id) = found[ELEMENT].as_str() {
                return Element(id.to_owned());
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no element {css}: {found}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn type_into(&self, element: &Element, text: &str) {
        let path = format!("/element/{}/value", element.0);
        self.call(reqwest::Method::POST, &path, Some(json!({"text": text})))
            .await;
    }

    pub async fn click(&self, element: &Element) {
        let path = format!("/element/{}/click", element.0);
        self.call(reqwest::Method::POST, &path, Some(json!({})))
            .await;
    }

    pub async fn text(&self, element: &Element) -> String {
        let path = format!("/element/{}/text", element.0);
        self.call(reqwest::Method::GET, &path, None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Runs `script` in the page and returns what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Waits up to 30 s for `script` to return true.
    pub async fn until(&self, script: &str) {
        let started = Instant::now();
        while self.run(script).await != Value::Bool(true) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never true: {script}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The page as PNG bytes.
    pub async fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap_or_default())
            .expect("a base64 PNG")
    }

    pub async fn close(&self) {
        let _ = self.http.delete(&self.base).send().await;
    }
}
