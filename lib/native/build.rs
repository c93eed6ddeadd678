//! Finds the engine libraries (RocksDB's release build, LMDB's build with frame pointers) and builds the WiredTiger shims.
//!
//! WiredTiger is loaded at run time through a small C shim (shim/wt_shim.c) compiled once per
//! WiredTiger release against that release's header and library, because the release a system
//! runs is a parameter (11.3.1 and 2.9.2 built from source by tools/build_wiredtiger.sh; the
//! posts' MongoDB trees by tools/build_wiredtiger_tag.sh; 3.2.1 from Debian's libwiredtiger-dev
//! where installed) and two releases cannot be linked into one binary. The
//! shims' paths are compiled into the runner (EB_WT_SHIMS).
//!
//! It also writes the workload registry: every module in src/workloads/ is one family's loops.
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
    // A tree built at a MongoDB tag (tools/build_wiredtiger_tag.sh) is named by its tag: two tags
    // can carry one WiredTiger version (mongodb-3.0.4 and mongodb-3.0.7 both ship 2.5.3).
    let version = match fs::read_to_string(lib_dir.join("release")) {
        Ok(tag) => tag.trim().to_string(),
        Err(_) => header_version(&include.join("wiredtiger.h"))?,
    };
    let target = out.join(format!("libeb_wt_{version}.so"));
    // WT_SESSION::log_flush came in 2.5.3's 3.0.5+ backports and 2.6.2: 3.0.4's tree and 2.6.1
    // have none (their mongod had no journal flusher), and the shim says so when asked.
    let header = fs::read_to_string(include.join("wiredtiger.h")).unwrap_or_default();
    let switches: Vec<&str> = if header.contains("__F(log_flush)") { vec![] } else { vec!["-DEB_WT_NO_LOG_FLUSH"] };
    let compiler = cc::Build::new().get_compiler();
    let status = Command::new(compiler.path())
        .args(["-O2", "-fPIC", "-shared", "-Wall"]).args(&switches).arg("-o").arg(&target)
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

/// One PerconaFT release's shim (shim/ft_shim.c): compiled against the release's own db.h, with the
/// release's differences as switches read from that header, and linked with the release's static
/// libraries into one shared object that exports only the shim's functions (a version script),
/// so several releases can be loaded side by side and nothing of one binds to another.
fn build_ft_shim(build: &Path, out: &Path) -> (String, PathBuf) {
    let release = fs::read_to_string(build.join("release"))
        .unwrap_or_else(|_| panic!("{} has no release file: rebuild it with tools/build_perconaft.sh", build.display()))
        .trim().to_string();
    let include = build.join("include");
    let header = fs::read_to_string(include.join("db.h")).unwrap_or_else(|_| panic!("{}/db.h is missing", include.display()));
    for built in ["include/db.h", "libtokufractaltree_static.a", "libtokuportability_static.a", "build-info"] {
        println!("cargo:rerun-if-changed={}", build.join(built).display());
    }
    let mut switches = Vec::new();
    for (needle, switch) in [("get_lock_wait_time_cb", "EB_FT_LOCK_TIMEOUT_CALLBACK"), ("set_fanout", "EB_FT_FANOUT"),
                             ("set_memcmp_magic", "EB_FT_MEMCMP_MAGIC"),
                             ("compress_buffers_before_eviction", "EB_FT_COMPRESS_BUFFERS"),
                             ("DBT_ARRAY *keys", "EB_FT_DBT_ARRAY")] {
        if header.contains(needle) {
            switches.push(format!("-D{switch}"));
        }
    }
    if header.lines().any(|l| l.trim_start().starts_with("DOUBLE")) {
        switches.push("-DEB_FT_STATUS_DOUBLE".into());
    }
    let map = out.join("ft_shim.map");
    fs::write(&map, "{ global: eb_ft_*; local: *; };\n").expect("cannot write the shim's version script");
    let target = out.join(format!("libeb_ft_{release}.so"));
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let status = Command::new(compiler.path())
        .args(["-x", "c", "-std=gnu99", "-O2", "-fPIC", "-fno-omit-frame-pointer", "-Wall", "shim/ft_shim.c", "-x", "none"])
        .args(&switches)
        .arg(format!("-I{}", include.display()))
        .args(["-shared", "-o"]).arg(&target)
        .arg(build.join("libtokufractaltree_static.a"))
        .arg(build.join("libtokuportability_static.a"))
        .arg(format!("-Wl,--version-script={}", map.display()))
        .args(["-Wl,--exclude-libs,ALL", "-Wl,-z,defs", "-lz", "-llzma", "-lstdc++", "-lpthread", "-ldl", "-lm"])
        .status()
        .expect("could not run the C compiler");
    assert!(status.success(), "building the PerconaFT {release} shim failed");
    (release, target)
}

/// The linked RocksDB's release, from its header (its C API has no version call).
fn rocksdb_version(build: &Path) -> String {
    let header = build.join("include/rocksdb/version.h");
    let text = fs::read_to_string(&header)
        .unwrap_or_else(|_| panic!("{} is missing: build RocksDB with tools/build_rocksdb.sh (make setup)", header.display()));
    let field = |name: &str| -> String {
        text.lines().find_map(|l| l.strip_prefix(&format!("#define {name} "))).unwrap_or("?").trim().to_string()
    };
    format!("{}.{}.{}", field("ROCKSDB_MAJOR"), field("ROCKSDB_MINOR"), field("ROCKSDB_PATCH"))
}

/// An engine library built by one of setup's scripts into the out folder `variable` names: linked
/// from there, and how it was built (the script's build-info) compiled in as EB_<ENGINE>_BUILD_INFO
/// for every run's manifest.
fn static_engine_build(variable: &str, engine: &str, library: &str, script: &str) -> PathBuf {
    println!("cargo:rerun-if-env-changed={variable}");
    let folder = PathBuf::from(env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} must name the {engine} build's out folder ({script}); run `make setup`")
    }));
    for built in [library, "build-info"] {
        println!("cargo:rerun-if-changed={}", folder.join(built).display());
    }
    println!("cargo:rustc-link-search=native={}", folder.display());
    let built = fs::read_to_string(folder.join("build-info"))
        .unwrap_or_else(|_| panic!("the {engine} build has no build-info: rebuild it with {script} (make setup)"));
    println!("cargo:rustc-env=EB_{}_BUILD_INFO={}", engine.to_uppercase(), built.trim());
    folder
}

/// A dependency's version as Cargo.lock pins it (the manifest says which driver ran).
fn locked_version(name: &str) -> String {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == format!("name = \"{name}\"") {
            if let Some(version) = lines.next().and_then(|v| v.strip_prefix("version = ")) {
                return version.trim_matches('"').to_string();
            }
        }
    }
    "?".to_string()
}

/// The modules of `src/<folder>` (`<name>.rs`, or `<name>/mod.rs`) that `keep` accepts by their
/// source text, sorted by name; each is declared in the generated code with its path, so adding
/// one adds no line to a list.
fn modules_in(folder: &str, keep: impl Fn(&str) -> bool) -> (Vec<(String, PathBuf)>, String) {
    let dir = fs::canonicalize(format!("src/{folder}")).unwrap_or_else(|_| panic!("src/{folder} is missing"));
    println!("cargo:rerun-if-changed=src/{folder}");
    let mut modules: Vec<(String, PathBuf)> = fs::read_dir(&dir).unwrap_or_else(|_| panic!("cannot list src/{folder}"))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let stem = path.file_stem()?.to_str()?.to_string();
            if path.is_dir() && path.join("mod.rs").is_file() {
                Some((stem, path.join("mod.rs")))
            } else if path.extension()? == "rs" && stem != "mod" {
                Some((stem, path))
            } else {
                None
            }
        })
        .filter(|(_, path)| fs::read_to_string(path).is_ok_and(|text| keep(&text)))
        .collect();
    modules.sort();
    let mut declarations = format!("// Written by build.rs from the modules in src/{folder}/.\n");
    for (name, path) in &modules {
        declarations += &format!("#[path = {:?}]\npub mod {name};\n", path.display().to_string());
    }
    (modules, declarations)
}

/// The families' native loops: every module in src/workloads/ is the family of that name and
/// provides `build(params)`; the family's one registry line is in
/// lib/enginebench/families/__init__.py, and lib/tests/test_registry.py checks that the two agree.
fn workload_registry(out: &Path) {
    let (modules, mut code) = modules_in("workloads", |_| true);
    let names: Vec<String> = modules.iter().map(|(name, _)| format!("{name:?}")).collect();
    code += &format!("\n/// The families this runner executes.\npub const NAMES: [&str; {}] = [{}];\n",
                     names.len(), names.join(", "));
    code += "\nfn registered(name: &str, params: &Value) -> Option<Result<Box<dyn Workload>>> {\n    match name {\n";
    for (name, _) in &modules {
        code += &format!("        {name:?} => Some({name}::build(params)),\n");
    }
    code += "        _ => None,\n    }\n}\n";
    fs::write(out.join("workloads.rs"), code).expect("cannot write the workload registry");
}

/// The embedded engines: every module in src/engines/ that declares its `ENTRY` (an
/// engines::EngineEntry) is the engine of that name; the other modules there are helpers. The
/// engine's one registry record on the Python side is in lib/enginebench/engines.py, and
/// lib/tests/test_registry.py checks that the two agree.
fn engine_registry(out: &Path) {
    let (modules, mut code) = modules_in("engines", |text| text.contains("pub const ENTRY: super::EngineEntry"));
    let entries: Vec<String> = modules.iter().map(|(name, _)| format!("&{name}::ENTRY")).collect();
    code += &format!("\n/// The engines this runner was built with.\npub const ENGINES: [&EngineEntry; {}] = [{}];\n",
                     entries.len(), entries.join(", "));
    fs::write(out.join("engines.rs"), code).expect("cannot write the engine registry");
}

fn main() {
    println!("cargo:rerun-if-changed=shim/wt_shim.c");
    println!("cargo:rerun-if-env-changed=EB_WIREDTIGER_BUILD");
    // RocksDB's release build and LMDB's with frame pointers, both from Debian's sources and linked
    // statically, found before anything of Debian's.
    let rocksdb = static_engine_build("EB_ROCKSDB_BUILD", "RocksDB", "librocksdb.a", "tools/build_rocksdb.sh");
    println!("cargo:rustc-env=EB_ROCKSDB_VERSION={}", rocksdb_version(&rocksdb));
    static_engine_build("EB_LMDB_BUILD", "LMDB", "liblmdb.a", "tools/build_lmdb.sh");
    // Debian's engine libraries (each engine's module names what it links: engines/*.rs).
    println!("cargo:rustc-link-search=native=/usr/lib/x86_64-linux-gnu");
    // mongod's engines allocate with tcmalloc; so do the runner's (the Rust side has its own: main.rs).
    println!("cargo:rustc-link-lib=tcmalloc_minimal");
    println!("cargo:rustc-env=EB_MONGODB_DRIVER_VERSION={}", locked_version("mongodb"));

    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    workload_registry(&out);
    engine_registry(&out);
    let mut shims = Vec::new();
    // The releases built from source (tools/build_wiredtiger.sh), `:`-separated: the first is
    // required, the others (older releases) are linked where they were built.
    let builds = env::var("EB_WIREDTIGER_BUILD").expect(
        "EB_WIREDTIGER_BUILD must name the WiredTiger build folder (tools/build_wiredtiger.sh); run `make setup`");
    let mut builds = builds.split(':').filter(|b| !b.is_empty()).map(PathBuf::from);
    let build = builds.next().expect("EB_WIREDTIGER_BUILD is empty");
    shims.push(build_shim(&build.join("include"), &build, &out)
        .expect("no wiredtiger.h under EB_WIREDTIGER_BUILD/include"));
    for older in builds {
        println!("cargo:rerun-if-changed={}", older.join("include/wiredtiger.h").display());
        // Only a file that exists: cargo re-runs this script every build while a watched path is
        // missing (WiredTiger 2.9.2's build writes no `release` file), which relinked the runner
        // on every `make native`.
        if older.join("release").is_file() {
            println!("cargo:rerun-if-changed={}", older.join("release").display());
        }
        if let Some(shim) = build_shim(&older.join("include"), &older, &out) {
            shims.push(shim);
        }
    }
    // PerconaFT: every release tools/build_perconaft.sh built (`:`-separated out folders).
    println!("cargo:rerun-if-changed=shim/ft_shim.c");
    println!("cargo:rerun-if-env-changed=EB_PERCONAFT_BUILDS");
    let ft_shims: Vec<String> = env::var("EB_PERCONAFT_BUILDS").unwrap_or_default().split(':')
        .filter(|b| !b.is_empty())
        .map(|b| build_ft_shim(Path::new(b), &out))
        .map(|(release, shim)| format!("{release}={}", shim.display()))
        .collect();
    println!("cargo:rustc-env=EB_FT_SHIMS={}", ft_shims.join(";"));
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
