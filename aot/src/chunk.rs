//! Reading a binary chunk, as `lua_dump` writes it (Lua 5.4's `ldump.c`): the functions
//! of a script with their bytecode, constants and line information.

use crate::TranslateError;

/// One function of a chunk, with the functions nested in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// The chunk name it was loaded under (`@plugin.lua`), inherited from the function
    /// it is nested in when the dump leaves it out.
    pub source: String,
    /// The lines it spans (0 for a main chunk).
    pub line_defined: u32,
    /// Its last line.
    pub last_line_defined: u32,
    /// Its instructions.
    pub code: Vec<u32>,
    /// Its constants, as the comments of the generated code show them.
    pub constants: Vec<Constant>,
    /// The functions defined inside it, in the order of its `OP_CLOSURE` indices.
    pub protos: Vec<Function>,
    /// The source line of each instruction, when the dump carries them.
    pub lines: Vec<u32>,
}

/// A constant of a function.
#[derive(Debug, Clone, PartialEq)]
pub enum Constant {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Boolean(bool),
    /// A float.
    Float(f64),
    /// An integer.
    Integer(i64),
    /// A string (its bytes).
    String(Vec<u8>),
}

impl Function {
    /// This function and the ones nested in it, depth first: the order in which the
    /// interpreter attaches compiled bodies (`lua_aotbind`).
    pub fn preorder(&self) -> Vec<&Function> {
        let mut all = vec![self];
        for proto in &self.protos {
            all.extend(proto.preorder());
        }
        all
    }
}

/// The header `lua_dump` writes for Lua 5.4 on a machine with 4-byte instructions,
/// 8-byte integers and floats, little endian (every machine toolcell runs on, and
/// wasm32).
const HEADER: &[u8] = &[
    0x1b, b'L', b'u', b'a', // LUA_SIGNATURE
    0x54, // LUAC_VERSION
    0,    // LUAC_FORMAT
    0x19, 0x93, b'\r', b'\n', 0x1a, b'\n', // LUAC_DATA
    4,     // sizeof(Instruction)
    8,     // sizeof(lua_Integer)
    8,     // sizeof(lua_Number)
    0x78, 0x56, 0, 0, 0, 0, 0, 0, // LUAC_INT
    0, 0, 0, 0, 0, 0x28, 0x77, 0x40, // LUAC_NUM (370.5)
];

/// Type tags of constants (`lobject.h`: `makevariant`).
const NIL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 0x11;
const INTEGER: u8 = 3;
const FLOAT: u8 = 0x13;
const SHORT_STRING: u8 = 4;
const LONG_STRING: u8 = 0x14;

/// A line delta that says "look in the absolute line table" (`ABSLINEINFO`).
const ABSOLUTE_LINE: i8 = -0x80;

/// Parses a chunk `lua_dump` wrote.
pub fn parse(bytes: &[u8]) -> Result<Function, TranslateError> {
    let mut reader = Reader { bytes, at: 0 };
    let header = reader.take(HEADER.len())?;
    if header != HEADER {
        return Err(TranslateError::Chunk(
            "not a Lua 5.4 chunk for this machine's formats".to_string(),
        ));
    }
    reader.byte()?; // the main function's number of upvalues
    let main = reader.function("")?;
    if reader.at != bytes.len() {
        return Err(TranslateError::Chunk(format!(
            "{} bytes after the main function",
            bytes.len() - reader.at
        )));
    }
    Ok(main)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TranslateError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| TranslateError::Chunk("the chunk ends early".to_string()))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn byte(&mut self) -> Result<u8, TranslateError> {
        Ok(self.take(1)?[0])
    }

    /// `dumpSize`: 7 bits a byte, most significant first, the last byte marked.
    fn size(&mut self) -> Result<usize, TranslateError> {
        let mut value: usize = 0;
        loop {
            let byte = self.byte()?;
            value = value
                .checked_mul(128)
                .and_then(|value| value.checked_add(usize::from(byte & 0x7f)))
                .ok_or_else(|| TranslateError::Chunk("a size overflows".to_string()))?;
            if byte & 0x80 != 0 {
                return Ok(value);
            }
        }
    }

    fn int(&mut self) -> Result<u32, TranslateError> {
        u32::try_from(self.size()?)
            .map_err(|_| TranslateError::Chunk("an integer overflows".to_string()))
    }

    fn u64(&mut self) -> Result<u64, TranslateError> {
        let bytes: [u8; 8] = self.take(8)?.try_into().expect("8 bytes taken");
        Ok(u64::from_le_bytes(bytes))
    }

    fn string(&mut self) -> Result<Option<Vec<u8>>, TranslateError> {
        match self.size()? {
            0 => Ok(None),
            n => Ok(Some(self.take(n - 1)?.to_vec())),
        }
    }

    fn count(&mut self) -> Result<usize, TranslateError> {
        let n = self.size()?;
        // Every element takes at least a byte: a count beyond what is left is corrupt,
        // and would otherwise reserve memory for nothing.
        if n > self.bytes.len() - self.at {
            return Err(TranslateError::Chunk(
                "a count exceeds the chunk".to_string(),
            ));
        }
        Ok(n)
    }

    fn function(&mut self, parent_source: &str) -> Result<Function, TranslateError> {
        let source = match self.string()? {
            Some(source) => String::from_utf8_lossy(&source).into_owned(),
            None => parent_source.to_string(),
        };
        let line_defined = self.int()?;
        let last_line_defined = self.int()?;
        self.take(3)?; // numparams, is_vararg, maxstacksize
        let code_size = self.count()?;
        let code = self
            .take(
                code_size
                    .checked_mul(4)
                    .ok_or_else(|| TranslateError::Chunk("the code size overflows".to_string()))?,
            )?
            .chunks_exact(4)
            .map(|word| u32::from_le_bytes(word.try_into().expect("4 bytes")))
            .collect();
        let mut constants = Vec::new();
        for _ in 0..self.count()? {
            constants.push(match self.byte()? {
                NIL => Constant::Nil,
                FALSE => Constant::Boolean(false),
                TRUE => Constant::Boolean(true),
                INTEGER => Constant::Integer(self.u64()? as i64),
                FLOAT => Constant::Float(f64::from_bits(self.u64()?)),
                SHORT_STRING | LONG_STRING => Constant::String(self.string()?.unwrap_or_default()),
                tag => {
                    return Err(TranslateError::Chunk(format!(
                        "a constant of unknown type {tag}"
                    )));
                }
            });
        }
        for _ in 0..self.count()? {
            self.take(3)?; // instack, idx, kind
        }
        let mut protos = Vec::new();
        for _ in 0..self.count()? {
            protos.push(self.function(&source)?);
        }
        let line_count = self.count()?;
        let deltas: Vec<i8> = self
            .take(line_count)?
            .iter()
            .map(|byte| *byte as i8)
            .collect();
        let mut absolute = Vec::new();
        for _ in 0..self.count()? {
            absolute.push((self.int()?, self.int()?));
        }
        for _ in 0..self.count()? {
            self.string()?; // a local's name
            self.int()?; // startpc
            self.int()?; // endpc
        }
        for _ in 0..self.count()? {
            self.string()?; // an upvalue's name
        }
        let lines = lines(line_defined, &deltas, &absolute);
        Ok(Function {
            source,
            line_defined,
            last_line_defined,
            code,
            constants,
            protos,
            lines,
        })
    }
}

/// Each instruction's line, as `luaG_getfuncline` finds it: deltas from the line
/// before, or the absolute line recorded for that instruction.
fn lines(line_defined: u32, deltas: &[i8], absolute: &[(u32, u32)]) -> Vec<u32> {
    let mut line = i64::from(line_defined);
    deltas
        .iter()
        .enumerate()
        .map(|(pc, delta)| {
            if *delta == ABSOLUTE_LINE {
                if let Some((_, at)) = absolute.iter().find(|(at_pc, _)| *at_pc as usize == pc) {
                    line = i64::from(*at);
                }
            } else {
                line += i64::from(*delta);
            }
            u32::try_from(line).unwrap_or(0)
        })
        .collect()
}
