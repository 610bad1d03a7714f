// The translation unit that builds graphrw's precompiled header (cmake/Precompiled.cmake).
