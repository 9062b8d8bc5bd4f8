#!/usr/bin/env bash
# A walk through the admin API with curl, against a running control plane (`pnpm start`).
#   BINDERY_ADMIN_TOKEN=<root token> bash docs/walkthrough.sh
# It reads the settings docs/configuration.md documents, as the gateway does: the control plane is at
# CONTROL_PLANE_URL when set, else at PORT (default 4000) on HOST (127.0.0.1 when HOST is unset,
# 0.0.0.0 or ::). Run it with the same settings as `pnpm start`.
# It creates a user, a project, two tables, three ADIs, an AEI, binds the three tools, previews the
# tool list, and shows the errors for a duplicate tool name, another user's ADI and a missing token.
set -euo pipefail
case "${HOST:-}" in '' | 0.0.0.0 | ::) CP_HOST=127.0.0.1 ;; *:*) CP_HOST="[$HOST]" ;; *) CP_HOST=$HOST ;; esac
BASE=${CONTROL_PLANE_URL:-http://$CP_HOST:${PORT:-4000}}
BASE=${BASE%/}
ROOT=${BINDERY_ADMIN_TOKEN:?set BINDERY_ADMIN_TOKEN to the root admin token}

# field JSON PATH: prints one field of a JSON answer (node, so nothing else needs installing).
field() { node -e 'let v=JSON.parse(process.argv[1]); for (const k of process.argv[2].split(".")) v=v?.[k]; console.log(typeof v==="string"?v:JSON.stringify(v))' "$1" "$2"; }
# api TOKEN METHOD PATH [BODY]: prints "STATUS BODY".
api() {
  local out; out=$(mktemp)
  local status
  status=$(curl -s -o "$out" -w '%{http_code}' -X "$2" "$BASE$3" \
    ${1:+-H "Authorization: Bearer $1"} -H 'content-type: application/json' ${4:+--data "$4"})
  printf '%s %s\n' "$status" "$(cat "$out")"; rm -f "$out"
}
step() { printf '\n== %s\n' "$*"; }
expect_status() { [ "${1%% *}" = "$2" ] || { echo "expected HTTP $2, got: $1" >&2; exit 1; }; }

step "create user alice (root token)"
r=$(api "$ROOT" POST /api/v2/users '{"name":"alice"}'); expect_status "$r" 201; echo "$r"
ALICE=$(field "${r#* }" token)

step "create a project and two tables"
r=$(api "$ALICE" POST /api/v2/projects '{"name":"CRM Main"}'); expect_status "$r" 201; echo "$r"
PROJECT=$(field "${r#* }" id)
r=$(api "$ALICE" POST /api/v2/tables "{\"name\":\"customers\",\"project_id\":\"$PROJECT\",\"data\":{\"customers\":[{\"id\":1,\"name\":\"Ada\"}]}}")
expect_status "$r" 201; echo "$r"; CUSTOMERS=$(field "${r#* }" id)
r=$(api "$ALICE" POST /api/v2/tables '{"name":"orders","data":[{"id":"o1","total":5}]}')
expect_status "$r" 201; echo "$r"; ORDERS=$(field "${r#* }" id)

step "create three ADIs on two tables"
r=$(api "$ALICE" POST /api/v2/adis "{\"table_id\":\"$CUSTOMERS\",\"json_path\":\"/customers\",\"operation_type\":\"query\"}")
expect_status "$r" 201; ADI1=$(field "${r#* }" id); echo "$ADI1 $(field "${r#* }" name)"
r=$(api "$ALICE" POST /api/v2/adis "{\"table_id\":\"$CUSTOMERS\",\"json_path\":\"/customers\",\"operation_type\":\"create\"}")
expect_status "$r" 201; ADI2=$(field "${r#* }" id); echo "$ADI2 $(field "${r#* }" name)"
r=$(api "$ALICE" POST /api/v2/adis "{\"table_id\":\"$ORDERS\",\"json_path\":\"\",\"operation_type\":\"preview\",\"config\":{\"preview_keys\":[\"id\"]}}")
expect_status "$r" 201; ADI3=$(field "${r#* }" id); echo "$ADI3 $(field "${r#* }" name)"

step "create an AEI (its api_key is in this answer only)"
r=$(api "$ALICE" POST /api/v2/aeis '{"name":"crm agent"}'); expect_status "$r" 201; echo "$r"
AEI=$(field "${r#* }" id)

step "bind all three; default tool names are {op}_{short_hash}"
r=$(api "$ALICE" POST "/api/v2/aeis/$AEI/bindings" "[{\"adi_id\":\"$ADI1\"},{\"adi_id\":\"$ADI2\"},{\"adi_id\":\"$ADI3\"}]")
expect_status "$r" 201
for name in $(field "${r#* }" items | node -e 'for (const b of JSON.parse(require("fs").readFileSync(0,"utf8"))) console.log(b.tool_name)'); do
  [[ $name =~ ^[a-z_]+_[a-z2-7]{6}$ ]] || { echo "unexpected default name $name" >&2; exit 1; }
  echo "bound $name"
done
FIRST=$(field "${r#* }" items.0.tool_name)

step "preview the MCP tool list"
r=$(api "$ALICE" GET "/api/v2/aeis/$AEI/tools"); expect_status "$r" 200; echo "$r"

step "a duplicate tool_name is 409"
r=$(api "$ALICE" POST /api/v2/adis "{\"table_id\":\"$ORDERS\",\"json_path\":\"\",\"operation_type\":\"get_all\"}")
ADI4=$(field "${r#* }" id)
r=$(api "$ALICE" POST "/api/v2/aeis/$AEI/bindings" "{\"adi_id\":\"$ADI4\",\"tool_name\":\"$FIRST\"}")
expect_status "$r" 409; echo "$r"

step "binding another user's ADI is refused (404: other users' ids are not revealed)"
r=$(api "$ROOT" POST /api/v2/users '{"name":"bob"}'); BOB=$(field "${r#* }" token)
r=$(api "$BOB" POST /api/v2/aeis '{"name":"bob agent"}'); BOB_AEI=$(field "${r#* }" id)
r=$(api "$BOB" POST "/api/v2/aeis/$BOB_AEI/bindings" "{\"adi_id\":\"$ADI1\"}")
expect_status "$r" 404; echo "$r"

step "no token is 401"
r=$(api "" GET /api/v2/aeis); expect_status "$r" 401; echo "$r"

printf '\nwalkthrough passed\n'
