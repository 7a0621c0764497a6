# Files named *_avx2.cpp hold the AVX2 kernels, *_avx512.cpp the AVX-512 (F, BW, VL, DQ, VNNI)
# ones: only they are compiled with those instructions enabled, and they are called only after
# run-time CPU feature detection (util/cpu_features.hpp). Every target that compiles lib/quant
# or lib/exec sources itself (strata_core, the fuzzers) applies this one rule.
function(strata_set_isa_flags)
  set(_avx2 -mavx2 -mfma -mf16c)
  set(_avx512 ${_avx2} -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports its own AVX-512 intrinsics (the _mm512_undefined_* behind casts, inserts and
    # extracts) as "(may be) used uninitialized": a false positive, silenced for these files only.
    list(APPEND _avx512 -Wno-maybe-uninitialized -Wno-uninitialized)
  endif()
  foreach(src IN LISTS ARGN)
    if(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${_avx2}")
    elseif(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${_avx512}")
    endif()
  endforeach()
endfunction()
