// SPDX-License-Identifier: Apache-2.0
// Empty: the idemgate_pch target exists to build the precompiled header (see CMakeLists.txt).
