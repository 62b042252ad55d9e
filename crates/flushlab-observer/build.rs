//! Builds observer.c into the shared object the crate embeds. The `cc` crate finds the C
//! compiler (CC, the target's gcc or cc) and its flags; the link into a shared object is asked
//! of that same compiler, since `cc` itself makes static archives only.
//!
//! Then the kernel observer's eBPF objects: those committed in `bpf/` (built by
//! `scripts/build-bpf.sh` with a pinned clang and libbpf's headers, checked byte for byte by CI),
//! so that no clang is needed here; or, with `CLANG=…` set, built from kernel.bpf.c with that
//! clang and the libbpf headers installed. Where neither can be had the build goes on without
//! them, `kernel::BUILT` is false, and wrap says so.

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("flushlab-observer.so");
    let compiler = cc::Build::new()
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true)
        .get_compiler();
    let status = compiler
        .to_command()
        .args([
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-Werror",
            "-Wl,-z,defs",
            "-o",
        ])
        .arg(&so)
        .arg("observer.c")
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler {:?}: {e}", compiler.path()));
    assert!(status.success(), "compiling observer.c failed: {status}");
    println!("cargo:rerun-if-changed=observer.c");
    println!("cargo:rerun-if-changed=record.h");
    println!("cargo:rerun-if-env-changed=CC");
    build_kernel_observer(&out, &compiler);
}

/// The committed objects, or kernel.bpf.c → `flushlab-kernel.bpf.o` (and the floor's) where
/// `CLANG` asks; the cfg `flushlab_kernel` where there are objects.
fn build_kernel_observer(out: &std::path::Path, c_compiler: &cc::Tool) {
    println!("cargo::rustc-check-cfg=cfg(flushlab_kernel)");
    println!("cargo:rerun-if-changed=kernel.bpf.c");
    println!("cargo:rerun-if-env-changed=CLANG");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" {
        println!(
            "cargo:warning=the kernel observer is built for x86_64 Linux alone (not {target})"
        );
        return;
    }
    let committed = std::path::Path::new("bpf");
    println!("cargo:rerun-if-changed=bpf");
    let objects = ["flushlab-kernel.bpf.o", "flushlab-kernel-floor.bpf.o"];
    if std::env::var_os("CLANG").is_none()
        && objects
            .iter()
            .all(|o| std::fs::copy(committed.join(o), out.join(o)).is_ok())
    {
        println!("cargo:rustc-cfg=flushlab_kernel");
        return;
    }
    let clang = std::env::var_os("CLANG").unwrap_or_else(|| "clang".into());
    // The kernel's headers' asm/ lives in the multiarch directory, which clang's bpf target
    // does not search.
    let multiarch = std::process::Command::new(c_compiler.path())
        .arg("-print-multiarch")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "x86_64-linux-gnu".to_owned());
    let compile = |object: &str, defines: &[&str]| {
        std::process::Command::new(&clang)
            .args([
                "-O2",
                "-g",
                "-target",
                "bpf",
                "-Wall",
                "-Werror",
                "-idirafter",
            ])
            .arg(format!("/usr/include/{multiarch}"))
            .args(defines)
            .args(["-c", "kernel.bpf.c", "-o"])
            .arg(out.join(object))
            .status()
    };
    // The floor (`FLUSHLAB_KERNEL_FLOOR`): the same hooks with programs that return at once,
    // what the cost of the observer's own work is measured against.
    let built = compile("flushlab-kernel.bpf.o", &[]).and_then(|status| {
        if status.success() {
            compile("flushlab-kernel-floor.bpf.o", &["-DFLUSHLAB_FLOOR"])
        } else {
            Ok(status)
        }
    });
    match built {
        Ok(status) if status.success() => println!("cargo:rustc-cfg=flushlab_kernel"),
        Ok(status) => println!(
            "cargo:warning=the kernel observer was not built: clang failed on kernel.bpf.c \
             ({status}; libbpf's headers: apt-get install libbpf-dev)"
        ),
        Err(e) => println!(
            "cargo:warning=the kernel observer was not built: {} ({e}): apt-get install clang \
             libbpf-dev",
            clang.to_string_lossy()
        ),
    }
}
