# SPDX-License-Identifier: Apache-2.0
# Writes OUT (a header defining IDEMGATE_COMMIT) from `git describe` of SOURCE_DIR, rewriting it
# only when the commit changed, so a build recompiles the one file that prints it only then.
# Outside a git checkout (a source tarball) the commit is "unknown".
execute_process(
  COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12 --exclude "*"
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#pragma once\n#define IDEMGATE_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${text}")
