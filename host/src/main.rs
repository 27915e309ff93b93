//! The `toolcell` command; everything it does lives in the library (`toolcell::cli`).

fn main() -> std::process::ExitCode {
    toolcell::cli::main()
}
