//! Builds observer.c into the shared object the crate embeds. The `cc` crate finds the C
//! compiler (CC, the target's gcc or cc) and its flags; the link into a shared object is asked
//! of that same compiler, since `cc` itself makes static archives only.

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
    println!("cargo:rerun-if-env-changed=CC");
}
