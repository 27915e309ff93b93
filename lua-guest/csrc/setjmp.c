// setjmp/longjmp for Lua on wasm32, on top of wasm exception handling.
//
// Clang lowers setjmp/longjmp (with -mllvm -wasm-enable-sjlj) to calls of these three
// functions; wasi-sdk ships them as libsetjmp, Rust's wasm32-wasip2 sysroot does not.
// __wasm_setjmp records which function invocation owns a jmp_buf and which label to
// return to; __wasm_longjmp throws the __c_longjmp exception with {env, val}, which the
// code generated for the setjmp caller catches and checks with __wasm_setjmp_test.

#include <stdint.h>

struct longjmp_payload {
    void *env;
    int val;
};

// Laid out inside the caller's jmp_buf (which is far larger).
struct jmp_state {
    void *invocation;
    uint32_t label;
    struct longjmp_payload payload;
};

void __wasm_setjmp(void *env, uint32_t label, void *invocation) {
    struct jmp_state *state = env;
    state->invocation = invocation;
    state->label = label;
}

uint32_t __wasm_setjmp_test(void *env, void *invocation) {
    struct jmp_state *state = env;
    return state->invocation == invocation ? state->label : 0;
}

void __wasm_longjmp(void *env, int val) {
    struct jmp_state *state = env;
    state->payload.env = env;
    state->payload.val = val == 0 ? 1 : val;
    __builtin_wasm_throw(1, &state->payload);
}
