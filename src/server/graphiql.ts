// What GraphiQL shows a newcomer at /graphql.
export const graphiqlDefaultQuery = `# Welcome to Dossier. Run an operation with the play button.
#
# mutation Create {
#   createWorkspace(input: { title: "EU battery supply", goal: "Map EU cell makers' 2027 capacity" }) {
#     __typename
#     ... on CreateWorkspaceSuccess { workspace { id title goal { version statement } } }
#     ... on Error { message }
#   }
# }
#
# subscription Watch($id: ID!) {
#   workspaceEvents(workspaceId: $id) { kind at goal { version statement } workspace { status } }
# }

query Workspaces {
  workspaces(first: 10) {
    edges { node { id title status goal { version statement } } }
    pageInfo { hasNextPage endCursor }
  }
}
`;
