/* unit_check.h: CHECK for the C harnesses of recorder/*_test.go: prints
 * the first check that failed, with its line, and exits 1. */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                  \
    do {                                                          \
        if (!(c)) {                                               \
            printf("line %d: check failed: %s\n", __LINE__, #c); \
            exit(1);                                              \
        }                                                         \
    } while (0)

#endif
