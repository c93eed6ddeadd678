//! Links the Debian engine libraries (RocksDB, LMDB) and builds the WiredTiger shims.
//!
//! WiredTiger is loaded at run time through a small C shim (shim/wt_shim.c) compiled once per
//! WiredTiger release against that release's header and library, because the release a system
//! runs is a parameter (11.3.1 built from source by tools/build_wiredtiger.sh; 3.2.1 from Debian's
//! libwiredtiger-dev where installed) and two releases cannot be linked into one binary. The
//! shims' paths are compiled into the runner (EB_WT_SHIMS).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn header_version(header: &Path) -> Option<String> {
    let text = fs::read_to_string(header).ok()?;
    let field = |name: &str| -> Option<String> {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("#define\t{name}")).or_else(|| l.strip_prefix(&format!("#define {name}"))))
            .map(|v| v.trim().to_string())
    };
    Some(format!("{}.{}.{}", field("WIREDTIGER_VERSION_MAJOR")?, field("WIREDTIGER_VERSION_MINOR")?,
                 field("WIREDTIGER_VERSION_PATCH")?))
}

fn build_shim(include: &Path, lib_dir: &Path, out: &Path) -> Option<(String, PathBuf, PathBuf)> {
    let version = header_version(&include.join("wiredtiger.h"))?;
    let target = out.join(format!("libeb_wt_{version}.so"));
    let compiler = cc::Build::new().get_compiler();
    let status = Command::new(compiler.path())
        .args(["-O2", "-fPIC", "-shared", "-Wall", "-o"]).arg(&target)
        .arg("shim/wt_shim.c")
        .arg(format!("-I{}", include.display()))
        .arg(format!("-L{}", lib_dir.display()))
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lwiredtiger")
        .status()
        .expect("could not run the C compiler");
    assert!(status.success(), "building the WiredTiger {version} shim failed");
    Some((version, target, lib_dir.to_path_buf()))
}

/// The linked RocksDB's release, from its header (its C API has no version call).
fn rocksdb_version() -> String {
    let text = fs::read_to_string("/usr/include/rocksdb/version.h").expect("RocksDB's headers (Debian librocksdb-dev) are missing");
    let field = |name: &str| -> String {
        text.lines().find_map(|l| l.strip_prefix(&format!("#define {name} "))).unwrap_or("?").trim().to_string()
    };
    format!("{}.{}.{}", field("ROCKSDB_MAJOR"), field("ROCKSDB_MINOR"), field("ROCKSDB_PATCH"))
}

fn main() {
    println!("cargo:rerun-if-changed=shim/wt_shim.c");
    println!("cargo:rerun-if-env-changed=EB_WIREDTIGER_BUILD");
    // RocksDB linked statically, as the MongoRocks builds of the posts were (mongo-rocks-3.0.4-
    // pre-STATIC): no dynamic-library indirection on its thread-local state. Its own
    // dependencies stay shared.
    println!("cargo:rustc-link-search=native=/usr/lib/x86_64-linux-gnu");
    println!("cargo:rustc-link-lib=static=rocksdb");
    for lib in ["gflags", "snappy", "z", "bz2", "lz4", "zstd", "stdc++"] {
        println!("cargo:rustc-link-lib={lib}");
    }
    println!("cargo:rustc-link-lib=lmdb");
    // mongod allocates with tcmalloc; so does the runner (every engine and the workloads).
    println!("cargo:rustc-link-lib=tcmalloc_minimal");
    println!("cargo:rustc-env=EB_ROCKSDB_VERSION={}", rocksdb_version());

    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mut shims = Vec::new();
    // The release built from source: required.
    let build = PathBuf::from(env::var("EB_WIREDTIGER_BUILD").expect(
        "EB_WIREDTIGER_BUILD must name the WiredTiger build folder (tools/build_wiredtiger.sh); run `make setup`"));
    shims.push(build_shim(&build.join("include"), &build, &out)
        .expect("no wiredtiger.h under EB_WIREDTIGER_BUILD/include"));
    // Debian's release, where its development package is installed: optional.
    let debian_lib = Path::new("/usr/lib/x86_64-linux-gnu");
    if Path::new("/usr/include/wiredtiger.h").exists() && debian_lib.join("libwiredtiger.so").exists() {
        if let Some(shim) = build_shim(Path::new("/usr/include"), debian_lib, &out) {
            shims.push(shim);
        }
    }
    // release=shim=library folder, `;`-separated; the first is the default release.
    let listed: Vec<String> = shims.iter().map(|(v, p, l)| format!("{v}={}={}", p.display(), l.display())).collect();
    println!("cargo:rustc-env=EB_WT_SHIMS={}", listed.join(";"));
}
