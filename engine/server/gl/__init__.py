"""The embedded OpenGL renderer (moderngl on EGL/llvmpipe): :class:`.backend.GLBackend` and its
passes, shaders, shadow map and frame maths. moderngl is only imported when a frame is first
rendered (the server's entry point imports :mod:`.llvm_order` only, which is the standard library)."""
