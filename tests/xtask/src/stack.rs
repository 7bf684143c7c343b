//! The local stack: a pinned ministack in a project venv, the SAM template deployed into it with
//! the functions built for the host (ministack runs them as local processes).

pub use crate::coords::Coordinates;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const REGION: &str = "eu-central-1";

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("tests/xtask sits two levels below the workspace root")
        .to_path_buf()
}

pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Creates `.venv` with the pinned ministack and SAM CLI unless it already has them.
pub fn ensure_venv() -> Result<PathBuf> {
    let root = root();
    let venv = root.join(".venv");
    let requirements = root.join("infra/requirements.txt");
    let stamp = venv.join(".firmspace-requirements");
    let wanted = std::fs::read_to_string(&requirements)?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(venv);
    }
    println!(
        "== installing ministack and SAM CLI into {}",
        venv.display()
    );
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&requirements))?;
    std::fs::write(&stamp, wanted)?;
    Ok(venv)
}

pub fn aws_env(cmd: &mut Command, endpoint: &str) {
    cmd.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", REGION)
        .env("AWS_REGION", REGION)
        .env("SAM_CLI_TELEMETRY", "0");
}

pub struct Stack {
    pub name: &'static str,
    pub port: u16,
    pub stage: &'static str,
}

impl Stack {
    /// The local stack: on port 4566 (LocalStack's default too), unless `FIRMSPACE_LOCAL_PORT`
    /// names another; every command that reaches the local stack reads the same variable.
    pub fn local() -> Self {
        let port = std::env::var("FIRMSPACE_LOCAL_PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(4566);
        Self {
            name: "firmspace-local",
            port,
            stage: "local",
        }
    }

    pub fn testing() -> Self {
        Self {
            name: "firmspace-test",
            port: 4577,
            stage: "test",
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Where ministack's Bedrock forwards Converse (an OpenAI-compatible endpoint): a test's
    /// stand-in model listens there; with nothing there, ministack answers with its own mock.
    pub fn model_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port + 20)
    }

    pub fn coords_file(&self) -> PathBuf {
        root().join(format!("target/{}-stack.json", self.stage))
    }

    pub fn pid_file(&self) -> PathBuf {
        root().join(format!("target/ministack-{}.pid", self.port))
    }

    /// The admin token of an earlier deploy of this stack, or a new random one.
    pub fn admin_token(&self) -> String {
        Coordinates::read(&self.coords_file())
            .map(|c| c.admin_token)
            .unwrap_or_else(|_| hex::encode(firmspace::ids::random_bytes::<16>()))
    }

    async fn ready(&self) -> bool {
        let url = format!("{}/_ministack/ready", self.endpoint());
        let client = firmspace::http::client(reqwest::Client::builder());
        let answer = client.get(url).timeout(Duration::from_secs(1)).send().await;
        answer.is_ok_and(|r| r.status().is_success())
    }

    /// Starts ministack unless it already answers on this port.
    pub async fn start(&self) -> Result<()> {
        let venv = ensure_venv()?;
        std::fs::create_dir_all(root().join("target"))?;
        if self.ready().await {
            println!("== ministack already running on {}", self.endpoint());
            return Ok(());
        }
        let log =
            std::fs::File::create(root().join(format!("target/ministack-{}.log", self.port)))?;
        let mut cmd = in_own_session(&venv.join("bin/ministack"));
        aws_env(&mut cmd, &self.endpoint());
        cmd.env("BIND_HOST", "127.0.0.1")
            .env("GATEWAY_PORT", self.port.to_string())
            .env("IOT_MTLS_ENABLED", "0")
            .env("MINISTACK_REGION", REGION)
            .env("MINISTACK_BEDROCK_PROXY_URL", self.model_url())
            .env("MINISTACK_BEDROCK_PROXY_TIMEOUT_SECONDS", "5")
            .stdout(log.try_clone()?)
            .stderr(log)
            .stdin(Stdio::null());
        let child = cmd.spawn().context("starting ministack")?;
        std::fs::write(self.pid_file(), child.id().to_string())?;
        let started = Instant::now();
        while !self.ready().await {
            if started.elapsed() > Duration::from_secs(30) {
                bail!("ministack did not become ready on {}", self.endpoint());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        println!(
            "== ministack ready on {} in {:?}",
            self.endpoint(),
            started.elapsed()
        );
        Ok(())
    }

    pub fn stop(&self) -> Result<()> {
        if let Ok(pid) = std::fs::read_to_string(self.pid_file()) {
            let _ = Command::new("kill").arg(pid.trim()).status();
            let _ = std::fs::remove_file(self.pid_file());
            println!("== ministack on {} stopped", self.endpoint());
        }
        Ok(())
    }

    /// Builds the one bootstrap for the host, points every function's code at it, and `sam
    /// deploy`s the template into ministack with the host's architecture.
    pub async fn deploy(&self, admin_token: &str) -> Result<Coordinates> {
        let root = root();
        let venv = ensure_venv()?;
        println!("== building the bootstrap of every function for the host");
        let mut build = Command::new(cargo());
        build
            .current_dir(&root)
            .args(["build", "-p", "firmspace-lambda", "--bin", "bootstrap"]);
        run(&mut build)?;
        let dir = root.join("target/lambda/bootstrap");
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(root.join("target/debug/bootstrap"), dir.join("bootstrap"))?;
        let template = std::fs::read_to_string(root.join("infra/template.yaml"))?;
        let local = local_template(&template, &dir);
        let local_path = root.join(format!("target/{}-template.yaml", self.stage));
        std::fs::write(&local_path, local)?;
        println!("== sam deploy {} into {}", self.name, self.endpoint());
        let started = Instant::now();
        let mut deploy = Command::new(venv.join("bin/sam"));
        aws_env(&mut deploy, &self.endpoint());
        deploy
            .current_dir(root.join("target"))
            .args(["deploy", "--template-file"])
            .arg(&local_path)
            .args([
                "--stack-name",
                self.name,
                "--resolve-s3",
                "--region",
                REGION,
            ])
            .args(["--capabilities", "CAPABILITY_IAM", "--no-confirm-changeset"])
            .args(["--no-fail-on-empty-changeset", "--parameter-overrides"])
            .arg(format!("Stage={}", self.stage))
            .arg(format!("Architecture={}", host_architecture()))
            .arg(format!("AdminToken={admin_token}"))
            // A message that keeps failing is in its DLQ within about a minute here.
            .args([
                "MaxReceiveCount=2",
                "WorkerVisibilitySeconds=15",
                "AutomationVisibilitySeconds=30",
                // The local stage's limits: the demo, the suites and the loads never meet them.
                "ReadsPerMinute=100000",
                "WritesPerMinute=100000",
                "DeliveriesPerMinute=100000",
            ])
            .arg(format!(
                "PublicBaseUrl={}/_aws/execute-api/",
                self.endpoint()
            ));
        let out = deploy.output().context("starting sam deploy")?;
        if !out.status.success() {
            bail!(
                "sam deploy failed:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        println!("== deployed in {:?}", started.elapsed());
        let outputs = self.outputs(&venv)?;
        Ok(Coordinates {
            api_url: outputs["ApiUrl"].clone(),
            aws_endpoint_url: self.endpoint(),
            table: outputs["TableName"].clone(),
            admin_token: admin_token.to_owned(),
            stack_name: self.name.to_owned(),
            secrets_key: outputs["SecretsKeyArn"].clone(),
            digest_key: outputs["DigestKeyArn"].clone(),
        })
    }

    fn outputs(&self, venv: &Path) -> Result<std::collections::HashMap<String, String>> {
        let mut cmd = Command::new(venv.join("bin/sam"));
        aws_env(&mut cmd, &self.endpoint());
        let out = cmd
            .current_dir(root().join("target"))
            .args([
                "list",
                "stack-outputs",
                "--stack-name",
                self.name,
                "--output",
                "json",
            ])
            .args(["--region", REGION])
            .output()?;
        if !out.status.success() {
            bail!(
                "sam list stack-outputs failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout)?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some((
                    r["OutputKey"].as_str()?.to_owned(),
                    r["OutputValue"].as_str()?.to_owned(),
                ))
            })
            .collect())
    }
}

pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The architecture of this host's builds, as the template's `Architecture` parameter names it.
pub fn host_architecture() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "x86_64"
    }
}

/// The cloud template with every function's code at the host-built bootstrap's directory.
pub fn local_template(template: &str, bootstrap_dir: &Path) -> String {
    template
        .lines()
        .map(|line| match line.split_once("CodeUri: ../lambda") {
            Some((indent, _)) => format!("{indent}CodeUri: {}", bootstrap_dir.display()),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `program` to be run in a session of its own (`setsid`, util-linux): closing the terminal
/// that started it does not stop it; `cargo xtask down` does. The spawned process is no group
/// leader, so `setsid` becomes `program` itself and the child's pid is the program's.
fn in_own_session(program: &std::path::Path) -> Command {
    let mut cmd = Command::new("setsid");
    cmd.arg(program);
    cmd
}

#[cfg(test)]
mod tests {
    /// The session a process belongs to: the sixth field of `/proc/{pid}/stat` (after the
    /// command's name in parentheses).
    fn session(pid: u32) -> u32 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(3).unwrap().parse().unwrap()
    }

    #[test]
    fn the_local_stack_runs_in_a_session_of_its_own_so_its_terminal_closing_does_not_stop_it() {
        let mut child = super::in_own_session(std::path::Path::new("sleep"))
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        // `setsid` makes its session and then becomes the program: wait until it has.
        let mut led = false;
        for _ in 0..100 {
            let became = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "sleep");
            if became && session(pid) == pid {
                led = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let ours = session(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(led, "the program leads a session of its own");
        assert_ne!(ours, pid, "not the session of the terminal that started it");
    }
}
