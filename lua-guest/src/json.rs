//! The global `json` module of clm-tool(5): `json.encode`, `json.decode` and `json.null`.
//!
//! Decoding builds Lua values straight from serde_json's parser (no intermediate
//! `serde_json::Value`). Encoding walks Lua tables with raw access only, so a plugin's
//! metamethods never run, and it writes into a buffer that refuses to grow past a limit.
//!
//! Needs serde_json's `unbounded_depth` feature (this module enforces [`MAX_DEPTH`] itself)
//! and `float_roundtrip` (so that floats written by `encode` decode to the same bits).

use std::cell::OnceCell;
use std::ffi::c_void;
use std::fmt::{self, Write as _};

use mlua::{Lua, LuaString, MultiValue, Table, Value};

use crate::errors::type_name;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Largest input json.decode accepts (2 MiB), per clm-tool(5).
pub const MAX_DECODE_BYTES: usize = toolcell_limits::MAX_JSON_BYTES;

/// Deepest nesting of arrays/objects accepted by decode and produced by encode.
///
/// Bounds the recursion of both directions, so hostile input or tables cannot overflow the
/// guest's stack: 128 nested arrays are accepted, 129 are not.
pub const MAX_DEPTH: usize = 128;

/// Lua glue that turns the Rust functions' error returns into ordinary Lua errors.
///
/// mlua raises Rust errors as userdata objects; plugins expect string messages (they
/// concatenate them), with the position of their own call, as `error(msg, 2)` gives.
const LUA_GLUE: &str = r#"
local encode_impl, decode_impl, error = ...
local json = {}
function json.encode(...)
  local text, err = encode_impl(...)
  if err ~= nil then error(err, 2) end
  return text
end
function json.decode(...)
  local value, err, raise = decode_impl(...)
  if raise then error(err, 2) end
  if err ~= nil then return nil, err end
  return value
end
return json
"#;

/// Installs the global `json` table (encode, decode, null). `max_encode_bytes` gives
/// the most text json.encode may produce; it is asked at each call, because the runtime
/// installs the table before it knows the plugin's memory limit (see `protocol::prepare`).
///
/// Plugins use this table as documented in clm-tool(5); it must be installed before any
/// plugin code runs, since the glue captures the pristine `error` function.
pub fn install(lua: &Lua, max_encode_bytes: impl Fn(&Lua) -> usize + 'static) -> mlua::Result<()> {
    array_metatable(lua)?;
    let encode_impl = lua.create_function(move |lua, args: MultiValue| {
        Ok(lua_encode(lua, &args, max_encode_bytes(lua)))
    })?;
    let decode_impl = lua.create_function(|lua, args: MultiValue| Ok(lua_decode(lua, &args)))?;
    let error: Value = lua.globals().raw_get("error")?;
    if !matches!(error, Value::Function(_)) {
        return Err(mlua::Error::runtime(
            "json: the global `error` function is missing; install json after the base library",
        ));
    }
    let json: Table =
        lua.load(LUA_GLUE)
            .set_name("=json")
            .call((encode_impl, decode_impl, error))?;
    json.raw_set("null", Value::NULL)?;
    lua.globals().raw_set("json", json)
}

/// Encodes a Lua value as JSON text. Used by json.encode and by the runtime (e.g. to
/// turn a tool's params_schema table into JSON). Err is a message without a "json.encode:" prefix.
///
/// The output never grows beyond `max_bytes`; errors name the place in the value that
/// could not be encoded, as a path like `$.items[3].name`.
pub fn encode(lua: &Lua, value: &Value, max_bytes: usize) -> Result<String, String> {
    let array_marker = Some(
        array_metatable(lua)
            .map_err(|e| format!("cannot read the JSON array metatable: {e}"))?
            .to_pointer(),
    );
    let mut encoder = Encoder {
        lua,
        array_marker,
        out: Output::new(max_bytes),
        path: Vec::new(),
        open_tables: Vec::new(),
    };
    encoder.value(value)?;
    Ok(encoder.out.text)
}

/// Decodes JSON text into Lua values. Used by json.decode and by the runtime to decode
/// tool arguments. Err is a message without a "json.decode:" prefix.
///
/// Objects become tables, arrays become sequences carrying the shared array metatable,
/// JSON null becomes [`Value::NULL`] (`json.null`).
pub fn decode(lua: &Lua, text: &[u8]) -> Result<Value, String> {
    if text.len() > MAX_DECODE_BYTES {
        return Err(format!(
            "input is {} bytes, larger than the limit of {MAX_DECODE_BYTES} bytes ({})",
            text.len(),
            toolcell_limits::format_bytes(MAX_DECODE_BYTES as u64)
        ));
    }
    // Fetched when the first array is decoded: tool arguments are objects, often with
    // no array in them.
    let array_mt = OnceCell::new();
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    // serde_json's own limit stops at 127 levels; ValueSeed enforces MAX_DEPTH instead,
    // before descending, so the stack stays bounded.
    deserializer.disable_recursion_limit();
    let seed = ValueSeed {
        lua,
        array_mt: &array_mt,
        depth: 0,
    };
    let value = seed
        .deserialize(&mut deserializer)
        .map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// The metatable that marks decoded arrays, kept where Rust finds it without a
/// registry lookup (decode runs for every tool call's arguments).
struct ArrayMetatable(Table);

/// Returns the metatable that marks decoded arrays, creating it on first use.
fn array_metatable(lua: &Lua) -> mlua::Result<Table> {
    if let Some(cached) = lua.app_data_ref::<ArrayMetatable>() {
        return Ok(cached.0.clone());
    }
    let mt = lua.create_table()?;
    lua.set_app_data(ArrayMetatable(mt.clone()));
    Ok(mt)
}

/// Body of `json.encode` for the Lua glue: `(text, nil)` or `(nil, message to raise)`.
fn lua_encode(lua: &Lua, args: &MultiValue, max_bytes: usize) -> (Option<String>, Option<String>) {
    let Some(value) = args.front() else {
        return (
            None,
            Some("bad argument #1 to 'encode' (value expected)".into()),
        );
    };
    match encode(lua, value, max_bytes) {
        Ok(text) => (Some(text), None),
        Err(msg) => (None, Some(format!("json.encode: {msg}"))),
    }
}

/// Body of `json.decode` for the Lua glue: `(value)`, `(nil, message)` for a decode
/// failure, or `(nil, message, true)` for a bad argument, which the glue raises.
fn lua_decode(lua: &Lua, args: &MultiValue) -> (Value, Option<String>, bool) {
    let text = match args.front() {
        Some(Value::String(text)) => text,
        other => {
            let got = other.map_or("no value", type_name);
            let msg = format!("bad argument #1 to 'decode' (string expected, got {got})");
            return (Value::Nil, Some(msg), true);
        }
    };
    match decode(lua, &text.as_bytes()) {
        Ok(value) => (value, None, false),
        Err(msg) => (Value::Nil, Some(format!("json.decode: {msg}")), false),
    }
}

// ---------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------

/// Builds one Lua value from the parser; `depth` counts the arrays/objects around it.
#[derive(Clone, Copy)]
struct ValueSeed<'a> {
    lua: &'a Lua,
    /// The metatable that marks arrays, once one was decoded.
    array_mt: &'a OnceCell<Table>,
    depth: usize,
}

impl<'a> ValueSeed<'a> {
    /// The metatable that marks decoded arrays.
    fn array_metatable(&self) -> mlua::Result<&'a Table> {
        if let Some(table) = self.array_mt.get() {
            return Ok(table);
        }
        let table = array_metatable(self.lua)?;
        Ok(self.array_mt.get_or_init(|| table))
    }

    /// The seed for the values inside a container, or an error past [`MAX_DEPTH`].
    fn enter<E: de::Error>(self) -> Result<ValueSeed<'a>, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format!(
                "arrays/objects nested deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(ValueSeed {
            depth: self.depth + 1,
            ..self
        })
    }
}

/// Turns a Lua failure (typically out of memory) into a parser error with a position.
fn lua_error<E: de::Error>(err: mlua::Error) -> E {
    E::custom(format!("cannot build the Lua value: {err}"))
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::NULL)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Boolean(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Integer(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        // Lua integers are i64; larger integers keep their magnitude as floats.
        Ok(i64::try_from(v).map_or(Value::Number(v as f64), Value::Integer))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Number(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.lua
            .create_string(v)
            .map(Value::String)
            .map_err(lua_error)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let table = self.lua.create_table().map_err(lua_error)?;
        table
            .set_metatable(Some(self.array_metatable().map_err(lua_error)?.clone()))
            .map_err(lua_error)?;
        let mut index: i64 = 0;
        while let Some(value) = seq.next_element_seed(inner)? {
            index += 1;
            table.raw_set(index, value).map_err(lua_error)?;
        }
        Ok(Value::Table(table))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let table = self.lua.create_table().map_err(lua_error)?;
        while let Some(key) = map.next_key_seed(KeySeed { lua: self.lua })? {
            let value = map.next_value_seed(inner)?;
            // A repeated key overwrites the earlier one: last wins.
            table.raw_set(key, value).map_err(lua_error)?;
        }
        Ok(Value::Table(table))
    }
}

/// Builds the Lua string for an object key without an intermediate Rust `String`.
struct KeySeed<'a> {
    lua: &'a Lua,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = LuaString;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<LuaString, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = LuaString;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<LuaString, E> {
        self.lua.create_string(v).map_err(lua_error)
    }
}

// ---------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------

/// Why the output buffer refused more text.
enum OutputError {
    TooLarge,
    OutOfMemory,
}

/// The JSON text being written; never holds (or reserves) more than `limit` bytes.
struct Output {
    text: String,
    limit: usize,
}

impl Output {
    fn new(limit: usize) -> Self {
        Output {
            text: String::new(),
            limit,
        }
    }

    /// Bytes that may still be written.
    fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.text.len())
    }

    fn push(&mut self, s: &str) -> Result<(), OutputError> {
        if s.len() > self.remaining() {
            return Err(OutputError::TooLarge);
        }
        let needed = self.text.len() + s.len();
        if needed > self.text.capacity() {
            // Grow geometrically, but never reserve past the limit.
            let target = needed
                .max(self.text.capacity().saturating_mul(2))
                .min(self.limit);
            self.text
                .try_reserve_exact(target - self.text.len())
                .map_err(|_| OutputError::OutOfMemory)?;
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// One step of the path from the root to the value being encoded.
enum Segment {
    /// An object member, by its JSON key text.
    Key(String),
    /// An array element, by its Lua index (1-based).
    Index(i64),
}

/// Renders a path as `$`, `.key`, `["odd key"]` and `[i]` steps.
fn render_path(path: &[Segment]) -> String {
    let mut text = String::from("$");
    for segment in path {
        match segment {
            Segment::Index(i) => {
                let _ = write!(text, "[{i}]");
            }
            Segment::Key(key) if is_identifier(key) => {
                text.push('.');
                text.push_str(key);
            }
            Segment::Key(key) => {
                text.push('[');
                text.push_str(&quoted(key));
                text.push(']');
            }
        }
    }
    text
}

/// `s` as a JSON string, for error messages.
fn quoted(s: &str) -> String {
    let mut text = String::with_capacity(s.len() + 2);
    let Ok(()) = write_json_string(s, |chunk| {
        text.push_str(chunk);
        Ok::<(), std::convert::Infallible>(())
    });
    text
}

/// Whether a key can be shown as `.key` in a path.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Emits `s` as a quoted JSON string: `"`, `\` and control characters escaped, everything
/// else (including non-ASCII and `/`) as is.
fn write_json_string<E>(s: &str, mut emit: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
    emit("\"")?;
    let mut start = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Escaped bytes are ASCII, so `start..i` and `i + 1..` fall on char boundaries.
        emit(&s[start..i])?;
        if escape.is_empty() {
            emit(&format!("\\u{byte:04x}"))?;
        } else {
            emit(escape)?;
        }
        start = i + 1;
    }
    emit(&s[start..])?;
    emit("\"")
}

/// Text of a finite float: shortest form that round-trips, always with a `.` or an
/// exponent so that it decodes as a float again (`1.0`, `0.1`, `1e300`).
fn float_text(f: f64) -> String {
    format!("{f:?}")
}

/// How a table will be written.
enum Shape {
    /// Elements 1..=n.
    Array(i64),
    Object,
}

/// A key of a table written as a JSON object.
struct ObjectKey {
    /// The JSON key text; keys are written sorted byte-wise by it.
    text: String,
    lookup: KeyLookup,
}

/// How to fetch an object key's value again from the table.
enum KeyLookup {
    Str,
    Int(i64),
    Float(f64),
}

/// Walks a Lua value, writing JSON text; keeps the path for error messages.
struct Encoder<'a> {
    lua: &'a Lua,
    /// Identity of the array metatable, if it exists yet.
    array_marker: Option<*const c_void>,
    out: Output,
    path: Vec<Segment>,
    /// Tables on the current path, to detect cycles and bound the depth.
    open_tables: Vec<*const c_void>,
}

impl Encoder<'_> {
    /// An error message saying what went wrong and where.
    fn fail(&self, what: impl fmt::Display) -> String {
        format!("{what} at {}", render_path(&self.path))
    }

    fn write(&mut self, s: &str) -> Result<(), String> {
        self.out.push(s).map_err(|e| self.output_error(e))
    }

    fn output_error(&self, err: OutputError) -> String {
        match err {
            OutputError::TooLarge => self.fail(format_args!(
                "output would exceed the limit of {} bytes",
                self.out.limit
            )),
            OutputError::OutOfMemory => self.fail("out of memory while writing the output"),
        }
    }

    fn value(&mut self, value: &Value) -> Result<(), String> {
        match value {
            Value::Nil => self.write("null"),
            Value::LightUserData(ud) if ud.0.is_null() => self.write("null"),
            Value::Boolean(b) => self.write(if *b { "true" } else { "false" }),
            Value::Integer(i) => self.write(&i.to_string()),
            Value::Number(f) => self.number(*f),
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Table(t) => self.table(t),
            Value::LightUserData(_) => {
                Err(self.fail("cannot encode a light userdata value other than json.null"))
            }
            other => Err(self.fail(format_args!("cannot encode a {} value", type_name(other)))),
        }
    }

    fn number(&mut self, f: f64) -> Result<(), String> {
        if !f.is_finite() {
            return Err(self.fail(format_args!(
                "cannot encode the number {f} (JSON has no NaN or infinity)"
            )));
        }
        self.write(&float_text(f))
    }

    fn string(&mut self, bytes: &[u8]) -> Result<(), String> {
        let s = utf8(bytes).map_err(|e| self.fail(format_args!("string {e}")))?;
        write_json_string(s, |chunk| self.write(chunk))
    }

    fn table(&mut self, table: &Table) -> Result<(), String> {
        let id = table.to_pointer();
        if self.open_tables.contains(&id) {
            return Err(self.fail("table contains itself (cycle)"));
        }
        if self.open_tables.len() >= MAX_DEPTH {
            return Err(self.fail(format_args!("tables nested deeper than {MAX_DEPTH} levels")));
        }
        self.open_tables.push(id);
        let result = match self.shape(table) {
            Ok(Shape::Array(len)) => self.array(table, len),
            Ok(Shape::Object) => self.object(table),
            Err(e) => Err(e),
        };
        self.open_tables.pop();
        result
    }

    /// Decides array or object from the raw keys: a table is an array when it carries the
    /// array metatable, or when its keys are exactly 1..n with n >= 1.
    fn shape(&self, table: &Table) -> Result<Shape, String> {
        let marked = table
            .metatable()
            .is_some_and(|mt| Some(mt.to_pointer()) == self.array_marker);
        // A zero raw length means t[1] is nil, so the keys cannot be 1..n: skip the scan.
        if !marked && table.raw_len() == 0 {
            return Ok(Shape::Object);
        }
        let mut count: i64 = 0;
        let mut max_index: i64 = 0;
        let mut non_index: Option<String> = None;
        table
            .for_each(|key: Value, _: Value| {
                count += 1;
                match key {
                    Value::Integer(i) if i >= 1 => max_index = max_index.max(i),
                    other => {
                        if non_index.is_none() {
                            non_index = Some(describe_key(&other));
                        }
                    }
                }
                Ok(())
            })
            .map_err(|e| self.fail(format_args!("cannot iterate the table: {e}")))?;
        match non_index {
            Some(key) if marked => Err(self.fail(format_args!(
                "table decoded from a JSON array has the non-index key {key}"
            ))),
            // Holes in a decoded array encode as null.
            None if marked => Ok(Shape::Array(max_index)),
            None if count > 0 && max_index == count => Ok(Shape::Array(count)),
            _ => Ok(Shape::Object),
        }
    }

    fn array(&mut self, table: &Table, len: i64) -> Result<(), String> {
        // Every element takes at least one byte and one separator: refuse a huge sparse
        // array before walking it.
        let least = u128::try_from(len).unwrap_or(0) * 2 + 1;
        if least > self.out.remaining() as u128 {
            return Err(self.output_error(OutputError::TooLarge));
        }
        self.write("[")?;
        for index in 1..=len {
            if index > 1 {
                self.write(",")?;
            }
            self.path.push(Segment::Index(index));
            let value = table
                .raw_get::<Value>(index)
                .map_err(|e| self.fail(format_args!("cannot read the element: {e}")))?;
            self.value(&value)?;
            self.path.pop();
        }
        self.write("]")
    }

    fn object(&mut self, table: &Table) -> Result<(), String> {
        let keys = self.object_keys(table)?;
        self.write("{")?;
        for (n, key) in keys.into_iter().enumerate() {
            if n > 0 {
                self.write(",")?;
            }
            write_json_string(&key.text, |chunk| self.write(chunk))?;
            self.write(":")?;
            let value = self.lookup(table, &key)?;
            self.path.push(Segment::Key(key.text));
            self.value(&value)?;
            self.path.pop();
        }
        self.write("}")
    }

    /// The table's keys as JSON key texts, sorted byte-wise, checked for clashes.
    fn object_keys(&self, table: &Table) -> Result<Vec<ObjectKey>, String> {
        let mut keys = Vec::new();
        let mut problem: Option<String> = None;
        table
            .for_each(|key: Value, _: Value| {
                if problem.is_none() {
                    match object_key(&key) {
                        Ok(key) => keys.push(key),
                        Err(e) => problem = Some(e),
                    }
                }
                Ok(())
            })
            .map_err(|e| self.fail(format_args!("cannot iterate the table: {e}")))?;
        if let Some(problem) = problem {
            return Err(self.fail(problem));
        }
        keys.sort_unstable_by(|a, b| a.text.cmp(&b.text));
        let clash = keys.windows(2).find_map(|pair| match pair {
            [a, b] if a.text == b.text => Some(&a.text),
            _ => None,
        });
        if let Some(text) = clash {
            return Err(self.fail(format_args!(
                "two keys (a string and a number) both encode as {}",
                quoted(text)
            )));
        }
        Ok(keys)
    }

    /// Reads an object member's value raw, by the key it was collected under.
    fn lookup(&self, table: &Table, key: &ObjectKey) -> Result<Value, String> {
        let result = match key.lookup {
            KeyLookup::Int(i) => table.raw_get(i),
            KeyLookup::Float(f) => table.raw_get(f),
            KeyLookup::Str => self
                .lua
                .create_string(&key.text)
                .and_then(|s| table.raw_get(s)),
        };
        result.map_err(|e| self.fail(format_args!("cannot read the member {:?}: {e}", key.text)))
    }
}

/// Converts one raw table key to its JSON key text, or says why it cannot be one.
fn object_key(key: &Value) -> Result<ObjectKey, String> {
    match key {
        Value::String(s) => {
            let bytes = s.as_bytes();
            let text = utf8(&bytes).map_err(|e| format!("object key {e}"))?;
            Ok(ObjectKey {
                text: text.to_owned(),
                lookup: KeyLookup::Str,
            })
        }
        Value::Integer(i) => Ok(ObjectKey {
            text: i.to_string(),
            lookup: KeyLookup::Int(*i),
        }),
        Value::Number(f) if f.is_finite() => Ok(ObjectKey {
            text: float_text(*f),
            lookup: KeyLookup::Float(*f),
        }),
        Value::Number(f) => Err(format!("cannot encode the object key {f}")),
        other => Err(format!(
            "cannot encode an object key of type {}",
            type_name(other)
        )),
    }
}

/// A key as shown in an error message.
fn describe_key(key: &Value) -> String {
    match key {
        Value::String(s) => format!("{:?}", s.to_string_lossy()),
        Value::Integer(i) => i.to_string(),
        Value::Number(f) => float_text(*f),
        other => format!("of type {}", type_name(other)),
    }
}

/// Checks UTF-8, with an error saying where it breaks.
fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "is not valid UTF-8 (bad byte at offset {})",
            e.valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{FromLuaMulti, LightUserData};

    /// Output limit used where a test does not exercise the limit itself.
    const LIMIT: usize = 1 << 20;

    fn lua() -> Lua {
        let lua = Lua::new();
        install(&lua, |_| LIMIT).expect("install json");
        lua
    }

    fn eval<T: FromLuaMulti>(lua: &Lua, code: &str) -> T {
        lua.load(code)
            .set_name("=plugin")
            .eval()
            .unwrap_or_else(|e| panic!("Lua failed: {e}\n{code}"))
    }

    /// Encodes the value of a Lua expression.
    fn enc(lua: &Lua, expr: &str) -> Result<String, String> {
        let value: Value = eval(lua, &format!("return {expr}"));
        encode(lua, &value, LIMIT)
    }

    /// Decodes `text` and encodes the result again.
    fn reencode(lua: &Lua, text: &str) -> String {
        let value = decode(lua, text.as_bytes()).expect("decode");
        encode(lua, &value, LIMIT).expect("encode")
    }

    fn assert_err_contains(result: Result<impl fmt::Debug, String>, parts: &[&str]) {
        match result {
            Ok(v) => panic!("expected an error containing {parts:?}, got Ok({v:?})"),
            Err(e) => {
                for part in parts {
                    assert!(e.contains(part), "error {e:?} does not contain {part:?}");
                }
            }
        }
    }

    #[test]
    fn nested_document_round_trips_with_sorted_keys() {
        let lua = lua();
        let text = r#"{"b":[1,2.5,"x",null,true,false,{}],"a":{"d":"é\n\"/","c":[]}}"#;
        // Same document, keys sorted, `/` and é left as is.
        let expected = r#"{"a":{"c":[],"d":"é\n\"/"},"b":[1,2.5,"x",null,true,false,{}]}"#;
        assert_eq!(reencode(&lua, text), expected);
        assert_eq!(reencode(&lua, expected), expected);
    }

    #[test]
    fn decoded_values_have_lua_types() {
        let lua = lua();
        let ok: bool = eval(
            &lua,
            r#"
            local t = json.decode('{"b":[1,2.5,"x",null,true],"n":null}')
            return #t.b == 5 and math.type(t.b[1]) == "integer" and math.type(t.b[2]) == "float"
                and t.b[3] == "x" and t.b[4] == json.null and t.b[5] == true
                and t.n == json.null and t.missing == nil
            "#,
        );
        assert!(ok);
    }

    #[test]
    fn null_is_a_distinct_sentinel_that_round_trips() {
        let lua = lua();
        let ok: bool = eval(
            &lua,
            r#"
            return json.decode("null") == json.null and json.null ~= nil
                and type(json.null) == "userdata"
                and json.encode(json.null) == "null" and json.encode(nil) == "null"
                and json.encode({json.null, json.null}) == "[null,null]"
                and #json.decode("[null,null,null]") == 3
            "#,
        );
        assert!(ok);
        assert!(decode(&lua, b"null").expect("null").is_null());
        assert_eq!(encode(&lua, &Value::NULL, LIMIT).as_deref(), Ok("null"));
    }

    #[test]
    fn empty_array_and_empty_object_stay_apart() {
        let lua = lua();
        assert_eq!(reencode(&lua, "[]"), "[]");
        assert_eq!(reencode(&lua, "{}"), "{}");
        assert_eq!(reencode(&lua, r#"{"a":[],"o":{}}"#), r#"{"a":[],"o":{}}"#);
        assert_eq!(enc(&lua, "{}").as_deref(), Ok("{}"));
        // A decoded array emptied by the plugin is still an array.
        let text: String = eval(
            &lua,
            r#"local t = json.decode("[1]"); t[1] = nil; return json.encode(t)"#,
        );
        assert_eq!(text, "[]");
    }

    #[test]
    fn decoded_arrays_share_one_metatable() {
        let lua = lua();
        let ok: bool = eval(
            &lua,
            r#"
            local a, b = json.decode("[1]"), json.decode("[[]]")
            local mt = getmetatable(a)
            return mt ~= nil and getmetatable(b) == mt and getmetatable(b[1]) == mt
                and getmetatable(json.decode("{}")) == nil
            "#,
        );
        assert!(ok);
    }

    #[test]
    fn array_detection_needs_exactly_one_to_n() {
        let lua = lua();
        assert_eq!(enc(&lua, "{1, 2, 3}").as_deref(), Ok("[1,2,3]"));
        assert_eq!(enc(&lua, "{'a'}").as_deref(), Ok(r#"["a"]"#));
        // Hole: keys 1 and 3 are not 1..n, so an object with decimal keys.
        assert_eq!(
            enc(&lua, "{[1] = 1, [3] = 3}").as_deref(),
            Ok(r#"{"1":1,"3":3}"#)
        );
        assert_eq!(enc(&lua, r#"{[5] = "x"}"#).as_deref(), Ok(r#"{"5":"x"}"#));
        // Mixed keys: an object; integer keys become their decimal text.
        assert_eq!(
            enc(&lua, "{10, 20, x = 1}").as_deref(),
            Ok(r#"{"1":10,"2":20,"x":1}"#)
        );
        assert_eq!(
            enc(&lua, r#"{[0] = "z", [1] = "a"}"#).as_deref(),
            Ok(r#"{"0":"z","1":"a"}"#)
        );
        assert_eq!(
            enc(&lua, r#"{[1.5] = "f", [-2] = "n"}"#).as_deref(),
            Ok(r#"{"-2":"n","1.5":"f"}"#)
        );
    }

    #[test]
    fn decoded_array_keeps_holes_as_null_and_rejects_other_keys() {
        let lua = lua();
        let text: String = eval(
            &lua,
            r#"local t = json.decode("[1,2,3]"); t[2] = nil; return json.encode(t)"#,
        );
        assert_eq!(text, "[1,null,3]");
        let value: Value = eval(&lua, r#"local t = json.decode("[1]"); t.x = 1; return t"#);
        assert_err_contains(
            encode(&lua, &value, LIMIT),
            &["non-index key \"x\"", "at $"],
        );
    }

    #[test]
    fn unsupported_key_types_are_named() {
        let lua = lua();
        assert_err_contains(enc(&lua, "{a = {[true] = 1}}"), &["type boolean", "at $.a"]);
        assert_err_contains(enc(&lua, "{[{}] = 1}"), &["type table", "at $"]);
        assert_err_contains(enc(&lua, "{[print] = 1}"), &["type function"]);
        assert_err_contains(enc(&lua, "{[math.huge] = 1}"), &["object key inf"]);
        // 5 and "5" would both be written as "5".
        assert_err_contains(enc(&lua, r#"{[5] = "a", ["5"] = "b"}"#), &[r#""5""#]);
    }

    #[test]
    fn object_keys_are_sorted_bytewise() {
        let lua = lua();
        // 'B' (0x42) < 'a' (0x61); "a b" < "aa" since ' ' (0x20) < 'a'.
        assert_eq!(
            enc(&lua, r#"{b = 1, a = 2, B = 3, ["a b"] = 4, aa = 5}"#).as_deref(),
            Ok(r#"{"B":3,"a":2,"a b":4,"aa":5,"b":1}"#)
        );
        // Numeric keys sort by their text: "10" < "9" < "x".
        assert_eq!(
            enc(&lua, r#"{[9] = 1, [10] = 2, x = 3}"#).as_deref(),
            Ok(r#"{"10":2,"9":1,"x":3}"#)
        );
    }

    #[test]
    fn decode_accepts_exactly_max_bytes_and_rejects_one_more() {
        let lua = lua();
        let inner = "a".repeat(MAX_DECODE_BYTES - 2);
        let text = format!("\"{inner}\"");
        assert_eq!(text.len(), MAX_DECODE_BYTES);
        let value = decode(&lua, text.as_bytes()).expect("exactly 2 MiB decodes");
        match value {
            Value::String(s) => assert_eq!(s.as_bytes().len(), MAX_DECODE_BYTES - 2),
            other => panic!("expected a string, got {other:?}"),
        }
        let text = format!("\"{inner}a\"");
        assert_err_contains(
            decode(&lua, text.as_bytes()),
            &["2097153 bytes", "limit of 2097152 bytes"],
        );
    }

    #[test]
    fn very_deep_input_fails_cleanly() {
        let lua = lua();
        let arrays = "[".repeat(100_000);
        assert_err_contains(
            decode(&lua, arrays.as_bytes()),
            &["nested deeper than 128 levels", "line 1 column 129"],
        );
        let objects = r#"{"a":"#.repeat(100_000);
        assert_err_contains(decode(&lua, objects.as_bytes()), &["deeper than 128"]);
        // Also balanced, so the depth check (not EOF) is what stops it.
        let balanced = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_err_contains(decode(&lua, balanced.as_bytes()), &["deeper than 128"]);
    }

    #[test]
    fn depth_limit_is_exactly_max_depth_both_ways() {
        let lua = lua();
        let deepest = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert_eq!(reencode(&lua, &deepest), deepest);
        let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_err_contains(decode(&lua, too_deep.as_bytes()), &["deeper than 128"]);

        let nest = |levels: usize| {
            format!("local t = {{}}; for _ = 2, {levels} do t = {{t}} end; return t")
        };
        let ok: Value = eval(&lua, &nest(MAX_DEPTH));
        // The innermost table is empty and unmarked, so it is written as {}.
        let expected = "[".repeat(MAX_DEPTH - 1) + "{}" + &"]".repeat(MAX_DEPTH - 1);
        assert_eq!(encode(&lua, &ok, LIMIT), Ok(expected));
        let deep: Value = eval(&lua, &nest(MAX_DEPTH + 1));
        let path = format!("at ${}", "[1]".repeat(MAX_DEPTH));
        assert_err_contains(encode(&lua, &deep, LIMIT), &["deeper than 128", &path]);
        // 100,000 nested tables stop at the limit instead of recursing.
        let huge: Value = eval(&lua, &nest(100_000));
        assert_err_contains(encode(&lua, &huge, LIMIT), &["deeper than 128"]);
    }

    #[test]
    fn invalid_utf8_input_is_rejected() {
        let lua = lua();
        assert!(decode(&lua, b"\"\xff\"").is_err());
        assert!(decode(&lua, b"\"a\xc3\"").is_err());
        assert!(decode(&lua, b"\xff").is_err());
        // A lone surrogate escape cannot become UTF-8 either.
        assert!(decode(&lua, br#""\ud800""#).is_err());
        let ok: bool = eval(
            &lua,
            r#"local v, err = json.decode('"\255"'); return v == nil and type(err) == "string""#,
        );
        assert!(ok);
    }

    #[test]
    fn invalid_utf8_lua_strings_are_not_encoded() {
        let lua = lua();
        assert_err_contains(
            enc(&lua, r#"{name = "ab\255"}"#),
            &["not valid UTF-8", "offset 2", "at $.name"],
        );
        assert_err_contains(
            enc(&lua, r#"{["\255"] = 1}"#),
            &["object key is not valid UTF-8"],
        );
    }

    #[test]
    fn strings_use_standard_escapes() {
        let lua = lua();
        assert_eq!(
            enc(&lua, r#""q\"b\\s/\n\r\t\b\f\0\1\31\127é€😀""#).as_deref(),
            Ok("\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0000\\u0001\\u001f\u{7f}é€😀\"")
        );
        let ok: bool = eval(
            &lua,
            r#"return json.decode('"\\u00e9\\ud83d\\ude00\\/\\n"') == "é😀/\n""#,
        );
        assert!(ok);
    }

    #[test]
    fn integers_and_floats_keep_their_kind() {
        let lua = lua();
        let num = |text: &str| decode(&lua, text.as_bytes());
        assert!(matches!(
            num("9223372036854775807"),
            Ok(Value::Integer(i64::MAX))
        ));
        assert!(matches!(
            num("-9223372036854775808"),
            Ok(Value::Integer(i64::MIN))
        ));
        // 2^63 does not fit i64: the float 2^63.
        assert!(matches!(num("9223372036854775808"), Ok(Value::Number(f)) if f == 2f64.powi(63)));
        assert!(matches!(num("18446744073709551615"), Ok(Value::Number(f)) if f == 2f64.powi(64)));
        assert!(matches!(num("1.0"), Ok(Value::Number(f)) if f == 1.0));
        assert!(matches!(num("-0.0"), Ok(Value::Number(f)) if f == 0.0 && f.is_sign_negative()));
        assert_err_contains(num("1e400"), &["out of range"]);
        assert_err_contains(num("[1] x"), &["trailing characters"]);

        assert_eq!(
            enc(&lua, "math.maxinteger").as_deref(),
            Ok("9223372036854775807")
        );
        assert_eq!(
            enc(&lua, "math.mininteger").as_deref(),
            Ok("-9223372036854775808")
        );
        assert_eq!(enc(&lua, "2^63").as_deref(), Ok("9.223372036854776e18"));
        assert_eq!(enc(&lua, "1.0").as_deref(), Ok("1.0"));
        assert_eq!(enc(&lua, "-0.0").as_deref(), Ok("-0.0"));
        assert_eq!(enc(&lua, "0.1").as_deref(), Ok("0.1"));
        assert_eq!(enc(&lua, "1e300").as_deref(), Ok("1e300"));
        assert_eq!(enc(&lua, "42").as_deref(), Ok("42"));
    }

    #[test]
    fn floats_round_trip_bit_for_bit() {
        let lua = lua();
        let samples = [
            0.1 + 0.2,
            0.9856906946328695,
            1.0715660391465826e-75,
            5e-324,
            2.2250738585072014e-308,
            f64::MAX,
            -1.5,
            1.0,
        ];
        for f in samples {
            let text = encode(&lua, &Value::Number(f), LIMIT).expect("finite");
            match decode(&lua, text.as_bytes()) {
                Ok(Value::Number(back)) => assert_eq!(back.to_bits(), f.to_bits(), "{text}"),
                other => panic!("{text} decoded as {other:?}"),
            }
        }
        let ok: bool = eval(
            &lua,
            r#"
            for _ = 1, 1000 do
                local x = math.random()
                if json.decode(json.encode(x)) ~= x then return false end
            end
            return true
            "#,
        );
        assert!(ok);
    }

    #[test]
    fn nan_and_infinity_are_errors() {
        let lua = lua();
        assert_err_contains(enc(&lua, "{x = 0/0}"), &["NaN", "at $.x"]);
        assert_err_contains(enc(&lua, "math.huge"), &["inf", "at $"]);
        assert_err_contains(enc(&lua, "{1, -math.huge}"), &["-inf", "at $[2]"]);
    }

    #[test]
    fn cycles_are_errors_but_shared_tables_are_not() {
        let lua = lua();
        let cyclic: Value = eval(&lua, "local t = {a = {}}; t.a.back = t; return t");
        assert_err_contains(encode(&lua, &cyclic, LIMIT), &["cycle", "at $.a.back"]);
        let shared: Value = eval(&lua, "local s = {1}; return {a = s, b = s}");
        assert_eq!(
            encode(&lua, &shared, LIMIT).as_deref(),
            Ok(r#"{"a":[1],"b":[1]}"#)
        );
    }

    #[test]
    fn output_limit_is_exact_and_named() {
        let lua = lua();
        let value: Value = eval(&lua, r#"return {"abcd"}"#);
        // ["abcd"] is 8 bytes.
        assert_eq!(encode(&lua, &value, 8).as_deref(), Ok(r#"["abcd"]"#));
        // With 7 only the closing bracket, which belongs to the root, does not fit.
        assert_err_contains(encode(&lua, &value, 7), &["limit of 7 bytes", "at $"]);
        // With 5 the string's own bytes do not fit, inside element 1.
        assert_err_contains(encode(&lua, &value, 5), &["limit of 5 bytes", "at $[1]"]);
    }

    #[test]
    fn output_limit_stops_a_huge_table_early() {
        let lua = lua();
        let limit = 8 << 20;
        let value: Value = eval(
            &lua,
            r#"local s = string.rep("x", 1024); local t = {}
               for i = 1, 1000000 do t[i] = s end; return t"#,
        );
        let start = std::time::Instant::now();
        // "[" plus k elements of 1026 bytes with k - 1 commas is 1027 * k bytes:
        // 8 MiB / 1027 = 8168.07, so element 8169 is the first that does not fit.
        assert_err_contains(
            encode(&lua, &value, limit),
            &["limit of 8388608 bytes", "at $[8169]"],
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        // A sparse decoded array would need 2 bytes per element: refused before walking.
        let sparse: Value = eval(&lua, "local t = json.decode('[]'); t[1e12] = 1; return t");
        assert_err_contains(
            encode(&lua, &sparse, limit),
            &["limit of 8388608 bytes", "at $"],
        );
    }

    #[test]
    fn unsupported_values_are_named_with_their_path() {
        let lua = lua();
        assert_err_contains(
            enc(&lua, "{items = {1, 2, {name = print}}}"),
            &["cannot encode a function value at $.items[3].name"],
        );
        assert_err_contains(
            enc(&lua, "{co = coroutine.create(print)}"),
            &["cannot encode a thread value at $.co"],
        );
        assert_err_contains(
            enc(&lua, r#"{["a b"] = {io.stdout}}"#),
            &["cannot encode a userdata value at $[\"a b\"][1]"],
        );
        let light = Value::LightUserData(LightUserData(std::ptr::dangling_mut()));
        assert_err_contains(encode(&lua, &light, LIMIT), &["light userdata", "at $"]);
    }

    #[test]
    fn metamethods_of_plugin_tables_never_run() {
        let lua = lua();
        let value: Value = eval(
            &lua,
            r#"
            local hostile = {
                __index = function() error("__index ran") end,
                __newindex = function() error("__newindex ran") end,
                __pairs = function() error("__pairs ran") end,
                __len = function() error("__len ran") end,
                __metatable = "locked",
            }
            return setmetatable({a = setmetatable({1, 2}, hostile)}, hostile)
            "#,
        );
        assert_eq!(encode(&lua, &value, LIMIT).as_deref(), Ok(r#"{"a":[1,2]}"#));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let lua = lua();
        assert_eq!(reencode(&lua, r#"{"a":1,"a":2}"#), r#"{"a":2}"#);
    }

    #[test]
    fn lua_decode_returns_nil_and_error() {
        let lua = lua();
        let (is_nil, err): (bool, String) = eval(
            &lua,
            r#"local v, err = json.decode("[1,"); return v == nil, err"#,
        );
        assert!(is_nil);
        assert!(err.starts_with("json.decode: "), "{err}");
        assert!(err.contains("line 1 column 3"), "{err}");
        let (count, err): (i64, String) = eval(
            &lua,
            r##"local big = string.rep(" ", 2 * 1024 * 1024) .. "1"
               return select("#", json.decode(big)), select(2, json.decode(big))"##,
        );
        assert_eq!(count, 2);
        assert!(
            err.starts_with("json.decode: input is 2097153 bytes"),
            "{err}"
        );
        // Success returns exactly one value.
        let count: i64 = eval(&lua, r##"return select("#", json.decode("1"))"##);
        assert_eq!(count, 1);
    }

    #[test]
    fn lua_decode_raises_on_a_non_string_argument() {
        let lua = lua();
        for (args, got) in [
            ("", "no value"),
            ("nil", "nil"),
            ("{}", "table"),
            ("1", "number"),
        ] {
            let (ok, kind, err): (bool, String, String) = eval(
                &lua,
                // Not a tail call: a tail call leaves no caller line to report.
                &format!(
                    "local ok, e = pcall(function() local v = json.decode({args}) return v end)
                     return ok, type(e), e"
                ),
            );
            assert!(!ok);
            assert_eq!(kind, "string");
            assert_eq!(
                err,
                format!("plugin:1: bad argument #1 to 'decode' (string expected, got {got})")
            );
        }
    }

    #[test]
    fn lua_encode_raises_string_errors_at_the_caller() {
        let lua = lua();
        let err: String = eval(
            &lua,
            "local ok, e = pcall(function()\n local s = json.encode({f = print}) return s\n end)
             return e",
        );
        assert_eq!(
            err,
            "plugin:2: json.encode: cannot encode a function value at $.f"
        );
        let err: String = eval(&lua, "return select(2, pcall(json.encode))");
        assert_eq!(err, "bad argument #1 to 'encode' (value expected)");
        let text: String = eval(&lua, r#"return json.encode({a = {1, "two"}})"#);
        assert_eq!(text, r#"{"a":[1,"two"]}"#);
    }

    #[test]
    fn lua_out_of_memory_while_decoding_is_an_error() {
        let lua = lua();
        // 100,000 small arrays need several MB of Lua memory; allow only 512 KiB more.
        let text = format!("[{}]", vec!["[1,2,3]"; 100_000].join(","));
        lua.globals().set("big", text.as_str()).expect("set big");
        lua.set_memory_limit(lua.used_memory() + 512 * 1024)
            .expect("memory limit");
        assert_err_contains(decode(&lua, text.as_bytes()), &["not enough memory"]);
        // From Lua, the same failure is a `nil, err` return, not a raised error.
        let (is_nil, err): (bool, String) =
            eval(&lua, "local v, err = json.decode(big) return v == nil, err");
        assert!(is_nil);
        assert!(err.starts_with("json.decode: "), "{err}");
        assert!(err.contains("not enough memory"), "{err}");
    }

    #[test]
    fn runtime_api_works_without_install() {
        let lua = Lua::new();
        let value: Value = eval(&lua, "return {b = {1, 2}, a = {}}");
        assert_eq!(
            encode(&lua, &value, LIMIT).as_deref(),
            Ok(r#"{"a":{},"b":[1,2]}"#)
        );
        // decode creates the array marker on first use, so [] survives.
        let value = decode(&lua, b"[]").expect("decode");
        assert_eq!(encode(&lua, &value, LIMIT).as_deref(), Ok("[]"));
    }
}
