// Node's http-parser (Debian: libhttp-parser-dev), which parses the server
// API's HTTP/1.1 requests (Sources/RewindServer/API/HTTPParser.swift).
#include <http_parser.h>
