"""The embedded OpenGL renderer (moderngl on EGL/llvmpipe): :class:`.backend.GLBackend` and its
passes, shaders, shadow map and frame maths. Only imported when a frame is first rendered."""
