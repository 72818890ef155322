//! `pfsqos-lctl-emu`: the emulated `lctl` of a Lustre OSS over a live pfsqos ossd
//! (`pfsqos_agent::emu`). Tests link it as `lctl` first on `PATH`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = pfsqos_agent::emu::main_with(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
