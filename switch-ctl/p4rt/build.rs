//! Compiles the crate's own P4Runtime and BfRuntime subsets (`proto/`) with protox, a protobuf compiler in pure
//! Rust, so building needs no system `protoc`; tonic then generates the message types, the client
//! and the server.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(
        ["p4/v1/p4runtime.proto", "bfrt_proto/bfruntime.proto"],
        ["proto"],
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
