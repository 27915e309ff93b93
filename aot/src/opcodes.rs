//! Lua 5.4's instructions: the opcodes in the interpreter's numbering, read from its
//! own `lopcodes.h`, and the operands the translator needs to follow its jumps.

use std::sync::LazyLock;

use crate::sources::LOPCODES_H;

/// The opcodes' names (`OP_MOVE`, ...), indexed by opcode number: the enum of
/// `lopcodes.h`, in order.
pub fn names() -> &'static [String] {
    static NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
        let start = LOPCODES_H
            .find("typedef enum {")
            .expect("lopcodes.h declares the OpCode enum");
        let end = start
            + LOPCODES_H[start..]
                .find("} OpCode;")
                .expect("the OpCode enum ends");
        // Each opcode starts a line of the enum; its operands follow in a comment.
        LOPCODES_H[start..end]
            .lines()
            .map(str::trim_start)
            .filter(|line| line.starts_with("OP_"))
            .map(|line| {
                line.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect()
    });
    &NAMES
}

/// The number of the opcode named `name`.
pub fn number(name: &str) -> u32 {
    names()
        .iter()
        .position(|known| known == name)
        .unwrap_or_else(|| panic!("lopcodes.h has no {name}")) as u32
}

/// An instruction's fields (`lopcodes.h`: the iABC, iABx, iAsBx, iAx and isJ formats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction(pub u32);

impl Instruction {
    /// The opcode.
    pub fn opcode(self) -> u32 {
        self.0 & 0x7f
    }

    /// The opcode's name.
    pub fn name(self) -> &'static str {
        names()
            .get(self.opcode() as usize)
            .map_or("OP_?", String::as_str)
    }

    /// Operand A.
    pub fn a(self) -> u32 {
        (self.0 >> 7) & 0xff
    }

    /// Flag k.
    pub fn k(self) -> bool {
        (self.0 >> 15) & 1 != 0
    }

    /// Operand B.
    pub fn b(self) -> u32 {
        (self.0 >> 16) & 0xff
    }

    /// Operand C.
    pub fn c(self) -> u32 {
        (self.0 >> 24) & 0xff
    }

    /// Operand Bx (unsigned, 17 bits).
    pub fn bx(self) -> i64 {
        i64::from(self.0 >> 15)
    }

    /// Operand sJ (a jump's displacement).
    pub fn sj(self) -> i64 {
        i64::from(self.0 >> 7) - ((1 << 25) - 1) / 2
    }
}
