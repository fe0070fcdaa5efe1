#pragma once
// Small text files of a run (markers, claims, records), written whole or not at all.
#include <string>

namespace spip::pipeline {

// The whole file, or "" where it cannot be read.
std::string read_text(const std::string& path);

// Writes `text` under PATH.partial and renames it, so the file is complete or absent;
// throws an InputError (exit 3: unusable output) with the system's reason when the
// write fails (a full disk shows only when the file is closed).
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace spip::pipeline
