//! The translator: each function of a chunk becomes one C function, its body, made of
//! one block per instruction, in order. A block is the interpreter's own code for the
//! opcode (`bodies`) with the instruction a constant; where the interpreter would go on
//! to the instruction at `pc`, the block jumps to that instruction's block, chosen among
//! the few it can reach (the next one, the one after, a jump's target), which the C
//! compiler resolves at compile time since `pc` is a constant on every path. A body
//! is entered only at its first instruction, so its control flow is the function's
//! own (see laot.h for how calls and resumed frames run).

use std::fmt::Write;

use crate::bodies::bodies;
use crate::chunk::{Constant, Function};
use crate::opcodes::{self, Instruction};

/// The symbol of a translated unit's `struct lua_AOTModule`, which the Lua guest looks
/// for (weakly) when it loads its plugin.
pub const MODULE_SYMBOL: &str = "toolcell_aot_module";

/// Translates `main` (a chunk's main function, as `chunk::parse` read it) into one C
/// unit. `digest` is `digest` of the chunk's stripped dump, `name` what the unit's
/// comments call the script.
pub fn translate(main: &Function, digest: u64, name: &str) -> String {
    let functions = main.preorder();
    let mut unit = String::new();
    let _ = writeln!(
        unit,
        "/* {}, compiled ahead of time by toolcell-aot {}: one C function per Lua\n   \
         function, made of the interpreter's opcode bodies (see laot.h). */\n\n\
         #define LUAI_AOT\n#include \"laot.h\"\n",
        comment_safe(name),
        env!("CARGO_PKG_VERSION"),
    );
    for (index, function) in functions.iter().enumerate() {
        function_unit(&mut unit, index, function);
    }
    let _ = writeln!(unit, "static const AOTBody aot_bodies[] = {{");
    for index in 0..functions.len() {
        let _ = writeln!(unit, "  aot_f{index},");
    }
    let _ = writeln!(
        unit,
        "}};\n\nconst struct lua_AOTModule {MODULE_SYMBOL} = {{\n  \
         LUAI_AOTABI, {}u, 0x{digest:016x}ull, aot_bodies\n}};",
        functions.len()
    );
    unit
}

/// The body of function number `index`.
fn function_unit(unit: &mut String, index: usize, function: &Function) {
    let size = function.code.len();
    let what = if function.line_defined == 0 {
        "main chunk".to_string()
    } else {
        format!(
            "lines {}-{}",
            function.line_defined, function.last_line_defined
        )
    };
    let _ = writeln!(
        unit,
        "/* function {index}: {} {what}, {size} instructions */\n\
         static CallInfo *aot_f{index} (lua_State *L, CallInfo *ci) {{\n  \
         aot_enter();",
        comment_safe(&function.source),
    );
    for pc in 0..size {
        instruction_unit(unit, function, pc);
    }
    let _ = writeln!(unit, "  aot_leave();\n}}\n");
}

/// The block of instruction `pc` of `function`.
fn instruction_unit(unit: &mut String, function: &Function, pc: usize) {
    let code = &function.code;
    let instruction = Instruction(code[pc]);
    let name = instruction.name();
    let line = function
        .lines
        .get(pc)
        .map_or_else(|| "-".to_string(), u32::to_string);
    let _ = writeln!(
        unit,
        "  /* {pc} [{line}] {name}{} */",
        operands(function, instruction)
    );
    let _ = writeln!(
        unit,
        "#undef vmbreak\n#define vmbreak {}",
        successors(function, pc)
    );
    if let Some(next) = code.get(pc + 1) {
        let _ = writeln!(unit, "#undef aot_ni\n#define aot_ni 0x{next:08x}u");
    }
    let target =
        |label: &str, at: usize| format!("#undef {label}\n#define {label} aot_{label}{at}");
    match name {
        "OP_CALL" => {
            let _ = writeln!(unit, "#undef startfunc\n#define startfunc aot_call{pc}");
        }
        "OP_TAILCALL" => {
            let _ = writeln!(unit, "#undef startfunc\n#define startfunc aot_tail");
        }
        "OP_TFORPREP" => {
            let _ = writeln!(unit, "{}", target("l_tforcall", jump_bx(pc, instruction)));
        }
        "OP_TFORCALL" => {
            let _ = writeln!(unit, "{}", target("l_tforcall", pc));
            let _ = writeln!(unit, "{}", target("l_tforloop", pc + 1));
        }
        "OP_TFORLOOP" => {
            let _ = writeln!(unit, "{}", target("l_tforloop", pc));
        }
        _ => {}
    }
    let body = bodies()
        .get(name)
        .unwrap_or_else(|| panic!("lvm.c has no body for {name}"));
    let _ = writeln!(
        unit,
        " op{pc}:\n  aot_fetch({pc}, 0x{:08x}u)\n  {body}",
        instruction.0
    );
    if name == "OP_CALL" {
        // A call's continuation is the next instruction: a call is never last.
        let _ = writeln!(unit, " aot_call{pc}:\n  aot_call(op{})", pc + 1);
    }
}

/// Where `OP_TFORPREP` at `pc` goes: its `OP_TFORCALL` (`pc += Bx` past the fetch).
fn jump_bx(pc: usize, instruction: Instruction) -> usize {
    (pc as i64 + 1 + instruction.bx()) as usize
}

/// `vmbreak` for instruction `pc`: a jump to the block of the instruction `pc` points
/// at once the opcode's body has run. Besides the next instruction, a body may skip
/// one (a test that fails, an arithmetic that needs no metamethod) or jump.
fn successors(function: &Function, pc: usize) -> String {
    let code = &function.code;
    let size = code.len() as i64;
    let here = pc as i64;
    let instruction = Instruction(code[pc]);
    let mut targets = vec![here + 2];
    match instruction.name() {
        "OP_JMP" => targets.push(here + 1 + instruction.sj()),
        "OP_FORLOOP" | "OP_TFORLOOP" => targets.push(here + 1 - instruction.bx()),
        "OP_FORPREP" => targets.push(here + 2 + instruction.bx()),
        _ => {}
    }
    // A test's jump is the instruction after it (`donextjump`).
    if let Some(next) = code.get(pc + 1).map(|next| Instruction(*next))
        && next.opcode() == opcodes::number("OP_JMP")
    {
        targets.push(here + 2 + next.sj());
    }
    targets.sort_unstable();
    targets.dedup();
    let mut dispatch = String::from("{ ");
    for target in targets
        .into_iter()
        .filter(|t| (0..size).contains(t) && *t != here + 1)
    {
        let _ = write!(dispatch, "if (pc == code + {target}) goto op{target}; ");
    }
    if here + 1 < size {
        let _ = write!(
            dispatch,
            "lua_assert(pc == code + {}); goto op{}; }}",
            here + 1,
            here + 1
        );
    } else {
        dispatch.push_str("lua_assert(0); return NULL; }");
    }
    dispatch
}

/// The operands of `instruction`, for its comment: the raw fields, and the constant
/// a `LOADK` or a field access names.
fn operands(function: &Function, instruction: Instruction) -> String {
    let mut text = format!(
        " A={} B={} C={} k={}",
        instruction.a(),
        instruction.b(),
        instruction.c(),
        u8::from(instruction.k())
    );
    let constant = match instruction.name() {
        "OP_LOADK" => usize::try_from(instruction.bx()).ok(),
        "OP_GETFIELD" | "OP_GETTABUP" | "OP_SELF" => Some(instruction.c() as usize),
        "OP_SETFIELD" | "OP_SETTABUP" => Some(instruction.b() as usize),
        _ => None,
    };
    if let Some(constant) = constant.and_then(|index| function.constants.get(index)) {
        let _ = write!(text, " ; {}", comment_safe(&describe(constant)));
    }
    text
}

fn describe(constant: &Constant) -> String {
    match constant {
        Constant::Nil => "nil".to_string(),
        Constant::Boolean(value) => value.to_string(),
        Constant::Float(value) => format!("{value:?}"),
        Constant::Integer(value) => value.to_string(),
        Constant::String(bytes) => {
            let text: String = String::from_utf8_lossy(bytes).chars().take(40).collect();
            format!("{text:?}")
        }
    }
}

/// `text` as it may appear inside a C comment: printable ASCII, without `*/`.
fn comment_safe(text: &str) -> String {
    text.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect::<String>()
        .replace("*/", "*?")
}
