// libwasi-emulated-signal: intentionally empty. Lua's build asks for the library, but
// the Lua core never raises signals; nothing in it is referenced at link time.
