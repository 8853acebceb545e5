/* json-get: parse a JSON file and print values by path, so shell tests need neither jq nor
 * python. Usage: json-get FILE [QUERY...]. A query is dot-separated object keys and array
 * indexes ("runs.0.tool.driver.name"); a trailing '#' prints the size of an array or object
 * ("runs.0.results#"), and "." is the document. Strings print raw, other values as compact
 * JSON. Exit 0 when the file parses and every query resolves; 1 otherwise, with the reason on
 * stderr; with no query it only validates. "json-get --indent FILE" prints the document as
 * jansson writes it whole (two-space indents, one final newline), which kernlint's JSON and SARIF
 * must match byte for byte though they are written a part at a time. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value at a query, or NULL. Keys containing '.' cannot be addressed; none of ours do. */
static json_t *json_get_path(json_t *v, const char *query) {
  if (!strcmp(query, ".")) return v;
  char *q = strdup(query);
  char *save = NULL;
  for (char *tok = strtok_r(q, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save)) {
    if (json_is_array(v)) {
      char *end;
      long i = strtol(tok, &end, 10);
      v = (*end || i < 0) ? NULL : json_array_get(v, (size_t)i);
    } else if (json_is_object(v)) {
      v = json_object_get(v, tok);
    } else {
      v = NULL;
    }
  }
  free(q);
  return v;
}

int main(int argc, char **argv) {
  bool indent = argc > 1 && !strcmp(argv[1], "--indent");
  if (argc < 2 || (indent && argc != 3)) {
    fprintf(stderr, "usage: json-get FILE [QUERY...] | json-get --indent FILE\n");
    return 2;
  }
  if (indent) argv++;
  json_error_t err;
  json_t *doc = json_load_file(argv[1], JSON_REJECT_DUPLICATES, &err);
  if (!doc) {
    fprintf(stderr, "json-get: %s:%d:%d: %s\n", argv[1], err.line, err.column, err.text);
    return 1;
  }
  int rc = 0;
  if (indent) {
    rc = json_dumpf(doc, stdout, JSON_INDENT(2)) == 0 && putchar('\n') != EOF ? 0 : 1;
    json_decref(doc);
    return rc;
  }
  for (int i = 2; i < argc; i++) {
    char *q = strdup(argv[i]);
    size_t n = strlen(q);
    int count = n > 0 && q[n - 1] == '#';
    if (count) q[n - 1] = '\0';
    json_t *v = json_get_path(doc, q[0] ? q : ".");
    if (!v) {
      fprintf(stderr, "json-get: %s: no value at '%s'\n", argv[1], argv[i]);
      rc = 1;
    } else if (count) {
      printf("%zu\n", json_is_array(v) ? json_array_size(v) : json_object_size(v));
    } else if (json_is_string(v)) {
      printf("%s\n", json_string_value(v));
    } else {
      char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
      printf("%s\n", s ? s : "");
      free(s);
    }
    free(q);
  }
  json_decref(doc);
  return rc;
}
