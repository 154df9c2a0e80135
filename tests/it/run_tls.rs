//! `deploy-gate run` against a real TLS server: nginx (Debian's, installed by scripts/setup.sh)
//! serving a chat completion over HTTPS with HTTP/2 offered by ALPN, its certificate issued by a
//! CA that this test makes with openssl. With the target's `tls_ca` the run verifies the server
//! and speaks HTTP/2 (nginx's access log says so); without it the certificate is refused and
//! every case is errored, never passed.

use crate::common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Nginx(Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn https_with_the_targets_ca_speaks_http2_and_an_unknown_ca_is_refused() {
    let (Some(nginx), Some(_)) = (find_program("nginx"), find_program("openssl")) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "nginx and openssl are installed by scripts/setup.sh for this test"
        );
        eprintln!("skipped: nginx or openssl is not installed (scripts/setup.sh installs them)");
        return;
    };
    let dir = tempdir();
    let d = dir.path();
    // A CA, and a server certificate for 127.0.0.1 it issues.
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=deploy-gate test CA",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(
        d.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );

    let port = free_port();
    let body = r#"{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"  PASS "},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}"#;
    let conf = format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 256; }}\n\
         http {{\n  log_format proto '$server_protocol $status';\n  access_log {d}/access.log proto;\n  client_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         server {{\n    listen 127.0.0.1:{port} ssl http2;\n    ssl_certificate {d}/server.pem;\n    ssl_certificate_key {d}/server.key;\n\
         location /v1/chat/completions {{ default_type application/json; return 200 '{body}'; }}\n  }}\n}}\n",
        d = d.display()
    );
    std::fs::write(d.join("nginx.conf"), conf).unwrap();
    let _nginx = Nginx(
        Command::new(&nginx)
            .args(["-c", &s(&d.join("nginx.conf")), "-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nginx starts"),
    );
    let until = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < until,
            "nginx did not listen: {}",
            std::fs::read_to_string(d.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let cases: String = (1..=12)
        .map(|i| format!("{{\"pipeline_id\":{i},\"template_id\":\"t\",\"input_text\":\"case {i}\",\"expected_verdict\":\"PASS\"}}\n"))
        .collect();
    let test_set = write(d, "cases.jsonl", &cases);
    let target = |ca: bool| {
        format!(
            "kind: openai-chat\nbase_url: https://127.0.0.1:{port}/v1\nmodel: m\nmessages:\n  - {{role: user, content: \"{{{{input_text}}}}\"}}\nretries: 0\n{}",
            if ca { "tls_ca: ca.pem\n" } else { "" }
        )
    };
    let with_ca = write(d, "with-ca.yaml", &target(true));
    let out = s(&d.join("v.jsonl"));
    let o = run(&[
        "run",
        "--test-set",
        &test_set,
        "--target",
        &with_ca,
        "--out",
        &out,
        "--no-cache",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records = std::fs::read_to_string(&out).unwrap();
    assert_eq!(records.lines().count(), 12);
    for line in records.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["verdict"], "PASS", "{line}");
        assert_eq!(v["usage"]["prompt_tokens"], 9);
    }
    let log = std::fs::read_to_string(d.join("access.log")).unwrap();
    assert_eq!(log.lines().filter(|l| *l == "HTTP/2.0 200").count(), 12, "{log}");

    // Without the CA: the certificate is not trusted, every case is errored naming why.
    let without = write(d, "without-ca.yaml", &target(false));
    let out2 = s(&d.join("v2.jsonl"));
    let o = run(&[
        "run",
        "--test-set",
        &test_set,
        "--target",
        &without,
        "--out",
        &out2,
        "--no-cache",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records = std::fs::read_to_string(&out2).unwrap();
    assert_eq!(records.lines().count(), 12);
    for line in records.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v.get("verdict").is_none(), "{line}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains("certificate") || e.contains("UnknownIssuer"), "{e}");
    }
}
