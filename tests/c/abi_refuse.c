/* A program that checks the ABI of the library it runs with, as the README tells users to.
 * The consumer test builds it once against the installed header (it must run), and once
 * against a copy of that header that claims another ABI (it must refuse, with the library's
 * message naming both versions). */
#include <qnt/qnt.h>

#include <stdio.h>

int main(void) {
  if (QNT_ABI_CHECK() != QNT_OK) {
    fprintf(stderr, "refused: %s\n", qnt_last_error_message());
    return 3;
  }
  printf("qnt %s, ABI %u: compatible\n", qnt_version_string(), (unsigned)qnt_abi_version());
  return 0;
}
