// SPDX-License-Identifier: Apache-2.0
#pragma once
// The secrets and the sensitive value the record-protection tests share: two 32-byte encryption
// keys (the current and the previous) and a card number looked for in what the store holds.
#include <string>

namespace idemgate::test {

inline const std::string key_a(32, 'A');
inline const std::string key_b(32, 'B');
inline const std::string card = "4111111111111111";

} // namespace idemgate::test
