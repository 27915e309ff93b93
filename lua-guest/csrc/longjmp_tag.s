# The exception tag that __wasm_longjmp throws and setjmp callers catch.
.globl __c_longjmp
.tagtype __c_longjmp i32
__c_longjmp:
