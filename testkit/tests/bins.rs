//! Tests of finding the server binaries and of skipping: the overriding
//! environment variables, the "missing" message, and `or_skip` with and
//! without N5_REQUIRE_SERVERS. One test in its own binary, since it changes
//! the process's environment.

use n5_testkit::{find_binary, or_skip, Binary, Error, S3Mode, S3Server};

#[test]
fn missing_binaries_skip_or_fail() {
    let dir = std::env::temp_dir().join(format!("n5-testkit-bins-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_executable = dir.join("weed");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();

    for (binary, var) in [
        (Binary::Weed, "N5_WEED"),
        (Binary::FakeGcsServer, "N5_FAKE_GCS_SERVER"),
        (Binary::Nginx, "N5_NGINX"),
    ] {
        assert_eq!(binary.env_var(), var);
        std::env::set_var(var, dir.join("nowhere"));
        match find_binary(binary) {
            Err(Error::Missing(m)) => {
                assert!(
                    m.contains(var) && m.contains("run tests/setup.sh servers"),
                    "{m}"
                );
                assert!(m.contains(binary.name()), "{m}");
            }
            other => panic!("{other:?}"),
        }
        std::env::set_var(var, &not_executable);
        assert!(matches!(find_binary(binary), Err(Error::Missing(_))));
        // An executable file is taken as it is.
        std::env::set_var(var, "/bin/sh");
        assert_eq!(
            find_binary(binary).unwrap(),
            std::path::Path::new("/bin/sh")
        );
    }

    std::env::set_var("N5_WEED", dir.join("nowhere"));
    let missing = S3Server::start(S3Mode::Anonymous)
        .err()
        .expect("no weed, no server");
    assert!(matches!(missing, Error::Missing(_)));

    std::env::remove_var("N5_REQUIRE_SERVERS");
    assert!(or_skip::<()>(Err(missing.clone())).is_none());
    std::env::set_var("N5_REQUIRE_SERVERS", "1");
    let required = std::panic::catch_unwind(|| or_skip::<()>(Err(missing.clone())));
    assert!(
        required.is_err(),
        "a missing binary fails when servers are required"
    );
    std::env::remove_var("N5_REQUIRE_SERVERS");
    let failed = std::panic::catch_unwind(|| or_skip::<()>(Err(Error::Failed("broken".into()))));
    assert!(
        failed.is_err(),
        "a server that fails to start is never skipped"
    );
    assert_eq!(or_skip(Ok(5)), Some(5));
    let _ = std::fs::remove_dir_all(dir);
}
