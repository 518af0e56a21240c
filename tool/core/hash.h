// XXH3-64 of a byte range: the fingerprint taken of every BO and host array.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace bod {
uint64_t hash_bytes(const void* data, size_t n);
std::string hash_hex(uint64_t h);  // 16 lowercase hex digits
}  // namespace bod
