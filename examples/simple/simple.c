/* simple: the smallest complete program on strata's C API, in the manner of llama.cpp's
 * examples/simple. Opens a GGUF model, tokenizes a prompt, generates greedily and prints the
 * text as it streams, then frees everything.
 *
 *   simple MODEL.gguf [PROMPT] [N_TOKENS]
 *
 * Uses include/strata/strata.h alone and builds with
 *   cc -I include simple.c -L <libdir> -lstrata
 * Every strata call that can fail is checked; a failure prints the library's message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/strata.h"

/* Prints what failed with the library's message for this thread; returns 0 when st failed. */
static int ok(strata_status st, const char* what) {
    if (st == STRATA_OK) return 1;
    fprintf(stderr, "simple: %s: %s (%s)\n", what, strata_last_error(), strata_status_string(st));
    return 0;
}

/* Writes the bytes of one token to stdout at once (a piece may be an incomplete UTF-8
 * sequence: the terminal joins the bytes). */
static int print_piece(strata_model* model, int32_t token) {
    char small[128];
    size_t length = 0;
    strata_status st = strata_token_to_piece(model, token, small, sizeof small, &length);
    if (st == STRATA_OK) {
        fwrite(small, 1, length, stdout);
    } else if (st == STRATA_ERR_BUFFER_TOO_SMALL) { /* a long piece: ask again with room for it */
        char* big = malloc(length);
        if (!big) {
            fprintf(stderr, "simple: out of memory\n");
            return 0;
        }
        st = strata_token_to_piece(model, token, big, length, &length);
        if (st == STRATA_OK) fwrite(big, 1, length, stdout);
        free(big);
    }
    if (!ok(st, "strata_token_to_piece")) return 0;
    fflush(stdout);
    return 1;
}

int main(int argc, char** argv) {
    if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
        printf("usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
        return 0;
    }
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
        return 1;
    }
    const char* path = argv[1];
    const char* prompt = argc > 2 ? argv[2] : "Hello my name is";
    const int n_predict = argc > 3 ? atoi(argv[3]) : 32;
    if (n_predict <= 0) {
        fprintf(stderr, "simple: N_TOKENS must be a positive number, not '%s'\n", argv[3]);
        return 1;
    }
    /* A library from another ABI generation would misread our parameter structs. */
    if (strata_abi_version() != STRATA_ABI_VERSION) {
        fprintf(stderr, "simple: libstrata has ABI %d, this program was built for %d\n", strata_abi_version(),
                STRATA_ABI_VERSION);
        return 1;
    }

    int status = 1;
    strata_model* model = NULL;
    strata_session* session = NULL;
    int32_t* tokens = NULL;
    size_t n_prompt = 0;
    int n_generated = 0;
    strata_status st = STRATA_OK;
    strata_model_params model_params;
    strata_session_params session_params;
    strata_sampling_params sampling;

    /* 1. The model: memory-mapped, every offset and size checked. */
    strata_model_default_params(&model_params);
    if (!ok(strata_model_open(&path, 1, &model_params, &model), "cannot open the model")) goto done;

    /* 2. The prompt's tokens: the first call asks how many there are, the second fills them. */
    st = strata_tokenize(model, prompt, strlen(prompt), 1, 0, NULL, 0, &n_prompt);
    if (st != STRATA_OK && st != STRATA_ERR_BUFFER_TOO_SMALL && !ok(st, "strata_tokenize")) goto done;
    if (n_prompt == 0) {
        fprintf(stderr, "simple: the prompt has no tokens\n");
        goto done;
    }
    tokens = malloc(n_prompt * sizeof *tokens);
    if (!tokens) {
        fprintf(stderr, "simple: out of memory\n");
        goto done;
    }
    if (!ok(strata_tokenize(model, prompt, strlen(prompt), 1, 0, tokens, n_prompt, &n_prompt), "strata_tokenize"))
        goto done;

    /* 3. A session whose context holds the prompt and every token to generate. */
    strata_session_default_params(&session_params);
    session_params.n_ctx = (int64_t)n_prompt + n_predict;
    if (!ok(strata_session_create(model, &session_params, &session), "cannot create a session")) goto done;

    /* 4. Greedy sampling: the most likely token at every step. */
    strata_sampling_default_params(&sampling);
    sampling.temperature = 0.0f;
    if (!ok(strata_session_set_sampling(session, &sampling), "strata_session_set_sampling")) goto done;

    /* 5. Prefill the prompt, then one token at a time until N_TOKENS or end of generation. */
    fputs(prompt, stdout);
    fflush(stdout);
    const int32_t* batch = tokens;
    size_t n_batch = n_prompt;
    int32_t next = 0;
    while (n_generated < n_predict) {
        if (!ok(strata_session_decode_sample(session, batch, n_batch, &next), "strata_session_decode_sample"))
            goto done;
        int is_eog = 0;
        if (!ok(strata_token_is_eog(model, next, &is_eog), "strata_token_is_eog")) goto done;
        if (is_eog) break;
        if (!print_piece(model, next)) goto done;
        ++n_generated;
        batch = &next;
        n_batch = 1;
    }
    fputc('\n', stdout);
    fprintf(stderr, "simple: %zu prompt tokens, %d generated\n", n_prompt, n_generated);
    status = 0;

done:
    /* Every *_free accepts NULL, so one exit path frees whatever was made. */
    strata_session_free(session);
    strata_model_free(model);
    free(tokens);
    return status;
}
