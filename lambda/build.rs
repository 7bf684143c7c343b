//! The bootstrap is linked as a position-dependent executable (`-no-pie`). A PIE of this size
//! carries about 59,000 dynamic relocations (1.4 MB of `.rela.dyn`) that the loader reads and
//! applies at every cold start, writing each page of `.data.rel.ro` (0.7 MB) as it goes; linked
//! at a fixed address, none of that happens, and a function's peak memory drops by about 2 MiB
//! (docs/measurements.md, "Cold start"). The code is the same; only the binary's own load
//! address is no longer randomised.

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
