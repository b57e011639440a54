// Operations a Relay 21 app would write against Dossier's schema: paginated fragments with
// @connection, made @refetchable (the root query for Query, `node` for a Workspace and a Trace).
// test/frontend/relay.test.ts compiles them with relay-compiler into a temporary directory.
import { graphql } from "relay-runtime";

graphql`
  query DossierRelayRunsQuery($first: Int = 2, $after: String) {
    ...DossierRelayRuns_query @arguments(first: $first, after: $after)
  }
`;

graphql`
  fragment DossierRelayRuns_query on Query
  @refetchable(queryName: "DossierRelayRunsPaginationQuery")
  @argumentDefinitions(first: { type: "Int", defaultValue: 2 }, after: { type: "String" }) {
    runs(first: $first, after: $after) @connection(key: "DossierRelayRuns_runs") {
      totalCount
      countCapped
      edges {
        node {
          id
          question
          status
          tokensUsed
          model
        }
      }
    }
  }
`;

graphql`
  query DossierRelayWorkspaceQuery($id: ID!) {
    workspace(id: $id) {
      ...DossierRelayLinks_workspace
    }
  }
`;

graphql`
  fragment DossierRelayLinks_workspace on Workspace
  @refetchable(queryName: "DossierRelayLinksPaginationQuery")
  @argumentDefinitions(first: { type: "Int", defaultValue: 1 }, after: { type: "String" }) {
    id
    title
    links(first: $first, after: $after) @connection(key: "DossierRelayLinks_links") {
      totalCount
      edges {
        node {
          id
          kind
          target {
            __typename
            ... on Publication {
              id
              title
            }
          }
        }
      }
    }
  }
`;

graphql`
  query DossierRelayTraceQuery($id: ID!) {
    node(id: $id) {
      ... on Run {
        id
        trace {
          ...DossierRelaySpans_trace @alias
        }
      }
    }
  }
`;

graphql`
  fragment DossierRelaySpans_trace on Trace
  @refetchable(queryName: "DossierRelaySpansPaginationQuery")
  @argumentDefinitions(first: { type: "Int", defaultValue: 2 }, after: { type: "String" }) {
    id
    spans(first: $first, after: $after) @connection(key: "DossierRelaySpans_spans") {
      totalCount
      countCapped
      edges {
        node {
          id
          kind
          name
        }
      }
    }
  }
`;
