//! Prints the C unit the translator makes of a Lua script, for reading it:
//! `cargo run -p toolcell-aot --example translate -- FILE.lua > FILE.c`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: translate FILE.lua")?;
    let unit = toolcell_aot::translate_script(&std::fs::read(&path)?, &format!("@{path}"))?;
    print!("{}", unit.c);
    Ok(())
}
