fn main() {
    // The whole BPF directory, not only the files scx_cargo lists: it names the headers present
    // when it last ran, so a header added later would not trigger a rebuild.
    println!("cargo:rerun-if-changed=src/bpf");
    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .unwrap();
}
