// The shape constants kernels written for PTO-ISA use in their template
// arguments (NUM_64 for 64), and the vector unit's block size.
#ifndef PTO_COMMON_CONSTANTS_HPP
#define PTO_COMMON_CONSTANTS_HPP

#include "pto/common/type.hpp"

namespace pto {

// Tile addresses (TASSIGN) and, on a2a3 and a5, rows are multiples of it.
constexpr int BLOCK_BYTE_SIZE = 32;

constexpr int NUM_1 = 1;
constexpr int NUM_2 = 2;
constexpr int NUM_4 = 4;
constexpr int NUM_8 = 8;
constexpr int NUM_12 = 12;
constexpr int NUM_16 = 16;
constexpr int NUM_32 = 32;
constexpr int NUM_64 = 64;
constexpr int NUM_77 = 77;
constexpr int NUM_96 = 96;
constexpr int NUM_128 = 128;
constexpr int NUM_256 = 256;
constexpr int NUM_512 = 512;

}  // namespace pto

#endif  // PTO_COMMON_CONSTANTS_HPP
